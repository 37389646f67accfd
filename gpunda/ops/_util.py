"""Small helpers shared by the op families (not ops themselves)."""
from __future__ import annotations

import functools
import math
import threading

import numpy as np

from gpunda._core import threads as _threads
from gpunda.base import GpundaError


def finite(a):
    """Whether NumPy array ``a`` holds no inf or NaN, by one sum (a finite array whose
    sum overflows to inf reads as not finite: callers then take their slower, exact way)."""
    return math.isfinite(float(np.add.reduce(a, axis=None)))


def special(xp):
    """scipy.special or cupyx.scipy.special for array module ``xp``."""
    if xp is np:
        import scipy.special as sps
        return sps
    from gpunda.backends import backend_of_xp
    return backend_of_xp(xp).special


def scalar_for(x, s):
    """Scalar ``s`` in the dtype MXNet would use with array ``x`` (its own dtype)."""
    k = x.dtype.kind
    if k == "f" or k == "c":
        return s
    try:
        return x.dtype.type(s)
    except OverflowError:
        return wrapped_int(x.dtype, s)


def wrapped_int(dtype, s):
    """Python number ``s`` cast into integer ``dtype`` as C casts it, wrapping modulo 2**bits
    (truncating a float first): what MXNet's kernels and NumPy 1.x do with ``int8 + 200`` or
    ``array([300], dtype=uint8)``, where NumPy 2 raises OverflowError."""
    dtype = np.dtype(dtype)
    if dtype.kind == "b":
        return dtype.type(bool(s))
    bits = 8 * dtype.itemsize
    v = int(s) & ((1 << bits) - 1)
    if dtype.kind == "i" and v >= 1 << (bits - 1):
        v -= 1 << bits
    return dtype.type(v)


def c_cast_float(xp, y, dtype):
    """Float array ``y`` cast to integer ``dtype`` as MXNet's CPU kernels cast it (x86
    truncation): NaN, infinities and values beyond the 32-bit (64-bit for int64/uint64)
    range become the "integer indefinite" INT_MIN, and narrower types keep the low bits of
    that 32-bit result (``int8(exp(10.))`` is 22026 mod 256 = 10). Done through explicit
    steps so CuPy (whose GPU casts saturate) gives the same bits as NumPy."""
    dtype = np.dtype(dtype)
    wide = np.int64 if dtype.itemsize == 8 else np.int32
    info = np.iinfo(wide)
    ok = xp.isfinite(y) & (y >= info.min) & (y < -float(info.min))
    safe = xp.where(ok, y, 0).astype(wide)
    return xp.where(ok, safe, wide(info.min)).astype(dtype)


def wrapped_array(source, dtype):
    """``np.array(source, dtype)`` for a Python sequence whose integers may not fit ``dtype``:
    wrapped as NumPy 1.x (and MXNet on it) stored them, where NumPy 2 raises OverflowError."""
    try:
        return np.array(source, dtype=dtype)
    except OverflowError:
        wide = np.array(source)
        if wide.dtype.kind == "O":     # beyond int64: reduce each integer first
            wide = np.vectorize(lambda v: wrapped_int(dtype, v), otypes=[dtype])(wide)
        return wide.astype(dtype)


def norm_axis(axis, ndim, where, name="axis"):
    """Normalise a possibly negative axis; GpundaError when out of range."""
    if not -ndim <= axis < max(ndim, 1):
        raise GpundaError(f"Operator {where}: {name}={axis} is out of range for an array "
                          f"with {ndim} dimension(s)")
    return axis % ndim if ndim else 0


def norm_axes(axis, ndim, where, exclude=False):
    """A sorted tuple of reduction axes from MXNet's axis/exclude params."""
    if axis is None or axis == ():
        axes = tuple(range(ndim))
        return tuple() if exclude and axis == () else axes
    if isinstance(axis, int):
        axis = (axis,)
    axes = tuple(sorted(set(norm_axis(a, ndim, where) for a in axis)))
    if exclude:
        axes = tuple(a for a in range(ndim) if a not in axes)
    return axes


# NOTE [Capture-safe GEMM]
# CuPy raises on any cuBLAS call made on a capturing stream, so the GEMM ops
# (FullyConnected, dot, batch_dot, the convolutions) multiply through
# ``matmul`` below. While CachedOp captures a CUDA-graph segment it installs a
# capture-safe GEMM (backends/_cuda_gemm.py: a tiled kernel launched like any
# other), so those ops join the graph instead of splitting it; at every other
# time the product goes to the array module's matmul (cuBLAS on a GPU). The
# override is per thread: only the capturing thread's ops are redirected.
class _CaptureGemm(threading.local):
    fn = None


capture_gemm = _CaptureGemm()


def matmul(xp, a, b):
    """``a @ b`` for the GEMM ops (2-D, or batched over equal leading axes)."""
    f = capture_gemm.fn
    if f is not None:
        return f(a, b)
    if not _threads.blas_sized:
        _threads.ensure_blas()
    return xp.matmul(a, b)


def on_threads(f):
    """An elementwise compute ``f(xp, p, x)`` that runs over pieces of a large NumPy
    ``x`` on gpunda's CPU threads (NOTE [CPU threads]); small arrays pay one compare."""
    def run(xp, p, x):
        if xp is np and getattr(x, "size", 0) >= _threads.SPLIT_MIN:
            return _threads.elementwise(lambda a: f(xp, p, a), x)
        return f(xp, p, x)
    return functools.wraps(f)(run)


def legacy_scalar(xp, r):
    """MXNet 1.x's legacy shape mode has no 0-d arrays: a 0-d result becomes shape (1,)."""
    if getattr(r, "ndim", 1) == 0:
        from gpunda.util import is_np_shape
        if not is_np_shape():
            return xp.reshape(xp.asarray(r), (1,))
        return xp.asarray(r)
    return r


def sum_to_shape(F, g, shape):
    """Sum ``g`` over broadcast axes so it has ``shape`` (gradient of broadcasting)."""
    gs = g.shape
    if gs == shape or tuple(gs) == tuple(shape):
        return g
    return F._sum_to(g, shape=shape)


# NOTE [Uniform input dtypes]
# MXNet's type inference never promotes: elemwise/broadcast arithmetic, dot,
# FullyConnected, Convolution, ... require every data input to have one dtype and
# refuse int32 + float32 ("Incompatible attr ... expected int32, got float32").
# NumPy would silently promote, so these ops check in their compute body, where
# the dtypes are at hand: an identity test of two dtype objects (interned by
# NumPy/CuPy for the builtin types), with ``!=`` only to rule out an equal but
# distinct dtype object before raising.
def dtype_mismatch(opname, names, arrays):
    """GpundaError: ``opname``'s inputs ``names`` must share one dtype (the error path)."""
    listed = ", ".join(f"{n} is {a.dtype.name}" for n, a in zip(names, arrays))
    return GpundaError(f"Operator {opname}: inputs must have the same dtype (MXNet does not "
                       f"promote): {listed}; convert one with astype()")


def require_same_dtype(opname, names, *arrays):
    """Raise ``dtype_mismatch`` unless all ``arrays`` have the dtype of the first."""
    dt = arrays[0].dtype
    for a in arrays[1:]:
        if a.dtype is not dt and a.dtype != dt:
            raise dtype_mismatch(opname, names, arrays)


def is_view_of(r, src):
    """Whether backend array ``r`` is a view of ``src``'s memory. NumPy and CuPy point a
    view's ``base`` at the array owning the memory, so identity answers; a backend whose
    ``base`` is a fresh wrapper (the test stand-in GPU) is compared by where the owner's
    memory starts."""
    b = getattr(r, "base", None)
    if b is None:
        return False
    sb = src.base
    if b is src or b is sb:
        return True
    if type(r) is np.ndarray:
        return False
    try:
        return b.data.ptr == (sb if sb is not None else src).data.ptr
    except AttributeError:
        return False


def not_differentiable(backward_name):
    """The gradient rule of a backward operator MXNet 1.9.1 registers without FGradient:
    asking it for a gradient (a second-order gradient of its forward op) raises MXNet's own
    error, which names the backward operator as MXNet calls it."""
    def rule(F, p, ins, outs, ograds):
        raise GpundaError(f"Operator {backward_name} is non-differentiable because it didn't "
                          f"register FGradient attribute.")
    return rule


# NOTE [Dtypes a kernel is instantiated for]
# MXNet dispatches a kernel on the input dtype through one of mshadow's switches, and
# an input of a dtype the switch does not list is refused (on every device):
# MSHADOW_REAL_TYPE_SWITCH lists float16/32/64 ("This operation only support floating
# point types"), MSHADOW_SGL_DBL_TYPE_SWITCH float32/64 (the linalg ops), and
# MSHADOW_TYPE_SWITCH every numeric type but not bool ("Unknown type enum 7"). NumPy
# computes any dtype, so the ops declared with such a kernel test their input's dtype
# first, inline (``x.dtype.kind``: one attribute read on the good path), and build the
# error here.
def not_real(opname, name, dtype):
    """GpundaError for an input outside MSHADOW_REAL_TYPE_SWITCH (float16/32/64)."""
    return GpundaError(f"Operator {opname}: input {name} has dtype {np.dtype(dtype).name}; "
                       f"This operation only support floating point types (float16, "
                       f"float32, float64), as MXNet's kernel")


def not_sgl_dbl(opname, name, dtype):
    """GpundaError for an input outside MSHADOW_SGL_DBL_TYPE_SWITCH (float32/64)."""
    return GpundaError(f"Operator {opname}: input {name} has dtype {np.dtype(dtype).name}; "
                       f"This operation only supports 32-bit and 64-bit floating point")


def no_bool(opname, name):
    """GpundaError for a bool input of a kernel instantiated for numeric types only."""
    return GpundaError(f"Operator {opname}: input {name} is bool; MXNet's kernel has no "
                       f"bool type (Unknown type enum 7); cast it first")

