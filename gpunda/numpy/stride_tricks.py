"""``mx.np.stride_tricks``: ``broadcast_arrays`` (defined with the manipulation functions)."""
from gpunda.numpy._manip import broadcast_arrays  # noqa: F401

__all__ = ["broadcast_arrays"]
