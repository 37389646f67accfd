"""``mx.np.linalg``: norms, decompositions, inverses and solvers on ``mx.np.ndarray``.

Differentiable where MXNet is: inv/det/slogdet/cholesky/eigh reuse the ``_linalg_*``
ops of ``nd.linalg``; svd/solve/pinv are ``_npi_*`` ops (ops/numpy/linalg.py); norm and
tensorinv/tensorsolve are compositions. eig/eigvals run NumPy's LAPACK on the host
(no gradient, as in MXNet); cond, lstsq, matrix_power, matrix_rank, multi_dot and qr are
MXNet's fallbacks to official NumPy (``fallback_linalg``).
"""
from __future__ import annotations

import numbers

import numpy as _onp

from gpunda.base import GpundaError
from gpunda.numpy._helpers import to_tensor, tensors, invoke, is_tensor
from gpunda.numpy import fallback_linalg
from gpunda.numpy.fallback_linalg import *  # noqa: F401,F403

__all__ = ["norm", "svd", "cholesky", "inv", "det", "slogdet", "solve", "tensorinv",
           "tensorsolve", "pinv", "eig", "eigh", "eigvals", "eigvalsh"] + fallback_linalg.__all__


def _np():
    from gpunda import numpy as np
    return np


def norm(x, ord=None, axis=None, keepdims=False):  # noqa: A002 (NumPy's name)
    """Matrix or vector norm (NumPy's ``ord`` values), differentiable."""
    x = to_tensor(x)
    if isinstance(axis, numbers.Integral):
        axis = (int(axis),)
    elif axis is not None:
        axis = tuple(int(a) for a in axis)
        if len(axis) > 2:
            raise ValueError("Improper number of dimensions to norm.")
    if isinstance(ord, str) and ord not in ("fro", "nuc", "inf", "-inf"):
        raise ValueError(f"Invalid norm order '{ord}'")
    nd = getattr(x, "ndim", None)
    if axis is None and ord is not None and nd is not None and nd > 2:
        raise ValueError("Improper number of dimensions to norm.")
    if axis is not None and len(axis) == 1 and ord in ("fro", "nuc"):
        raise ValueError(f"Invalid norm order '{ord}' for vectors")
    return invoke("_npi_norm", [x], ord=None if ord is None else str(ord), axis=axis,
                  keepdims=keepdims)


def svd(a):
    """Reduced SVD of (..., M, N) with M <= N: ``(ut, l, v)`` with ``a = ut @ diag(l) @ v``."""
    return tuple(invoke("_npi_svd", [to_tensor(a)]))


def _float_only(name, a):
    # MXNet 1.9.1's np.linalg LAPACK kernels refuse integer and bool arrays (MXNetError)
    dt = getattr(a, "dtype", None)     # a Symbol has no dtype until inference
    if dt is not None and _onp.dtype(dt).kind != "f":
        raise GpundaError(f"linalg.{name}: input dtype {_onp.dtype(dt).name} is not "
                          f"supported (floating point only)")


def cholesky(a):
    """The lower Cholesky factor L of a symmetric positive-definite matrix (A = L L^T)."""
    a = to_tensor(a)
    _float_only("cholesky", a)
    return invoke("_linalg_potrf", [a], lower=True)


def inv(a):
    """The inverse of each square matrix."""
    a = to_tensor(a)
    _float_only("inv", a)
    return invoke("_linalg_inverse", [a])


def det(a):
    """The determinant of each square matrix."""
    a = to_tensor(a)
    _float_only("det", a)
    return invoke("_linalg_det", [a])


def slogdet(a):
    """``(sign, log|det|)`` of each square matrix."""
    return tuple(invoke("_linalg_slogdet", [to_tensor(a)]))


def solve(a, b):
    """The solution ``x`` of ``a @ x = b``."""
    a, b = tensors([a, b])
    return invoke("_npi_solve", [a, b])


def pinv(a, rcond=1e-15, hermitian=False):
    """The Moore-Penrose pseudo-inverse (``rcond`` a number or an array)."""
    a = to_tensor(a)
    if is_tensor(rcond) or isinstance(rcond, _onp.ndarray):
        return invoke("_npi_pinv", [a, to_tensor(rcond, a)], hermitian=hermitian)
    return invoke("_npi_pinv_scalar_rcond", [a], rcond=float(rcond), hermitian=hermitian)


def eigh(a, UPLO="L"):  # noqa: N803 (NumPy's name)
    """Eigenvalues (ascending) and eigenvectors (columns) of symmetric matrices."""
    if UPLO not in ("L", "U"):
        raise ValueError("UPLO argument must be 'L' or 'U'")
    np = _np()
    a = to_tensor(a)
    # MXNet's _npi_eigh computes integer input in float64; the legacy _linalg_syevd below
    # takes float32/float64 only (float16 is refused by both). A Symbol (hybridized) has no
    # dtype until inference: its graph casts through an op that leaves floats as they are
    dt = getattr(a, "dtype", None)
    if dt is None:
        a = invoke("_linalg_int_to_float64", [a])
    elif _onp.dtype(dt).kind in "iu":
        a = a.astype("float64")
    if UPLO == "U":
        a = np.swapaxes(a, -1, -2)
    u, w = invoke("_linalg_syevd", [a])
    return w, np.swapaxes(u, -1, -2)


def eigvalsh(a, UPLO="L"):  # noqa: N803
    """Eigenvalues (ascending) of symmetric matrices."""
    return eigh(a, UPLO)[0]


def eig(a):
    """Eigenvalues and right eigenvectors of square matrices (host LAPACK, no gradient)."""
    return tuple(invoke("_npi_eig", [to_tensor(a)]))


def eigvals(a):
    """Eigenvalues of square matrices (host LAPACK, no gradient)."""
    return invoke("_npi_eigvals", [to_tensor(a)])


def tensorinv(a, ind=2):
    """The inverse of ``a`` seen as a matrix over its first ``ind`` and remaining axes."""
    if ind <= 0:
        # an MXNetError in MXNet 1.9.1 (not a ValueError)
        raise GpundaError(f"tensorinv: Invalid ind argument: ind={ind} must be positive")
    return invoke("_npi_tensorinv", [to_tensor(a)], ind=int(ind))


def tensorsolve(a, b, axes=None):
    """The solution ``x`` of ``tensordot(a, x, x.ndim) = b``."""
    np = _np()
    a, b = tensors([a, b])
    if axes is not None:
        axes = tuple(axes)
        a = np.moveaxis(a, axes, tuple(range(-len(axes), 0)))
    return invoke("_npi_tensorsolve", [a, b])
