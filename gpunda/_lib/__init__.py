"""Library-layer machinery behind public MXNet modules: the metric classes behind ``mx.metric``."""
