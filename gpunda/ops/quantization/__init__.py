"""Quantized ops (MXNet's src/operator/quantization)."""
