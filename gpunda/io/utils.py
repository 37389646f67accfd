"""Helpers of mx.io kept under MXNet's module name (``mx.io.utils``)."""
from gpunda.io.io import _init_data  # noqa: F401
