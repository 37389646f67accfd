"""``mxnet._numpy_op_doc``: one stub per built-in ``_np_*`` operator, giving the NumPy
signature of the ``mx.np`` function that calls it (``numpy_op_signature`` reads them).
The behaviour is documented on the functions themselves (gpunda/numpy/)."""
# pylint: disable=unused-argument


def _np_all(a, axis=None, out=None, keepdims=False):
    """mx.np.all"""


def _np_any(a, axis=None, out=None, keepdims=False):
    """mx.np.any"""


def _np_cumsum(a, axis=None, dtype=None, out=None):
    """mx.np.cumsum"""


def _np_transpose(a, axes=None):
    """mx.np.transpose"""


def _np_dot(a, b, out=None):
    """mx.np.dot"""


def _np_sum(a, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    """mx.np.sum"""


def _np_reshape(a, newshape, order="C"):
    """mx.np.reshape"""


def _np_roll(a, shift, axis=None):
    """mx.np.roll"""


def _np_squeeze(a, axis=None):
    """mx.np.squeeze"""


def _np_max(a, axis=None, out=None, keepdims=False, initial=None):
    """mx.np.max"""


def _np_min(a, axis=None, out=None, keepdims=False, initial=None):
    """mx.np.min"""


def _np_prod(a, axis=None, dtype=None, out=None, keepdims=False, initial=None):
    """mx.np.prod"""


def _np_moveaxis(a, source, destination):
    """mx.np.moveaxis"""


def _np_diag(v, k=0):
    """mx.np.diag"""


def _np_diagonal(a, offset=0, axis1=0, axis2=1):
    """mx.np.diagonal"""


def _np_diagflat(v, k=0):
    """mx.np.diagflat"""


# MXNet's other names of the reductions and of repeat (aliases of the ops above)
def _np_amax(a, axis=None, out=None, keepdims=False, initial=None):
    """mx.np.amax"""


def _np_amin(a, axis=None, out=None, keepdims=False, initial=None):
    """mx.np.amin"""


def _np_product(a, axis=None, dtype=None, out=None, keepdims=False, initial=None):
    """mx.np.product"""


def _np_sometrue(a, axis=None, out=None, keepdims=False):
    """mx.np.sometrue"""


def _np_repeat(a, repeats, axis=None):
    """mx.np.repeat"""


def _np_copy(a, out=None):
    """mx.np.copy"""


def _np_atleast_1d(*arys):
    """mx.np.atleast_1d"""


def _np_atleast_2d(*arys):
    """mx.np.atleast_2d"""


def _np_atleast_3d(*arys):
    """mx.np.atleast_3d"""


def _np_trace(a, offset=0, axis1=0, axis2=1, out=None):
    """mx.np.trace"""


def _np__random_shuffle(x):
    """mx.np.random.shuffle"""


def _npx_nonzero(a):
    """mx.npx.nonzero"""


def _npx_constraint_check(x, msg):
    """mx.npx.constraint_check"""


def _npx_reshape(a, newshape, reverse=False, order="C"):
    """mx.npx.reshape"""
