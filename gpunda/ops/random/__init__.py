"""Random samplers, their PDFs and unique sampling (MXNet's src/operator/random)."""
