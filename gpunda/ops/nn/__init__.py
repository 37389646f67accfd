"""Neural-network ops (MXNet's src/operator/nn and the legacy layer ops): FullyConnected,
activations, convolution and pooling, normalisation, losses, RNN, sequence ops, CTC, Crop."""
