"""CPU fast kernels used by op declarations on the NumPy backend: convolution routes (flat rows,
shifted rows, row grid), BatchNorm planes, 2x2 pooling planes, fused LSTM. Not ops themselves."""
