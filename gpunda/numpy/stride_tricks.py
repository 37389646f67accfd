"""``mx.np.stride_tricks``: ``broadcast_arrays`` (defined with the manipulation functions)."""
from gpunda.numpy._manip import broadcast_arrays  # noqa: F401

__all__ = ["broadcast_arrays"]


def _broadcast_shape(*args):
    """The shape the arrays ``args`` broadcast to together (``()`` for none)."""
    from gpunda.ndarray.indexing import _get_broadcast_shape
    shape = ()
    for arr in args:
        shape = _get_broadcast_shape(shape, arr.shape)
    return shape
