"""Contrib ops (MXNet's src/operator/contrib) that are not vision ops: NLP helpers, FFT,
count sketch, Hawkes process, DGL graph ops, contrib backward and misc layers."""
