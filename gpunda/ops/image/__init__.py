"""Image ops (MXNet's src/operator/image): transforms and colour jitter."""
