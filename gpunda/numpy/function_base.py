"""``mx.np.function_base``: ``meshgrid`` (defined with the creation functions)."""
from gpunda.numpy.creation import meshgrid  # noqa: F401

__all__ = ["meshgrid"]
