"""``mx.np.linalg``: norms, decompositions, inverses and solvers on ``mx.np.ndarray``.

Differentiable where MXNet is: inv/det/slogdet/cholesky/eigh reuse the ``_linalg_*``
ops of ``nd.linalg``; svd/solve/pinv are ``_npi_*`` ops (ops/np_linalg.py); norm and
tensorinv/tensorsolve are compositions. eig/eigvals run NumPy's LAPACK on the host
(no gradient, as in MXNet); cond, lstsq, matrix_power, matrix_rank, multi_dot and qr are
MXNet's fallbacks to official NumPy (``fallback_linalg``).
"""
from __future__ import annotations

import numbers

import numpy as _onp

from ..base import GpundaError
from ._helpers import to_tensor, tensors, invoke, is_tensor
from . import fallback_linalg
from .fallback_linalg import *  # noqa: F401,F403

__all__ = ["norm", "svd", "cholesky", "inv", "det", "slogdet", "solve", "tensorinv",
           "tensorsolve", "pinv", "eig", "eigh", "eigvals", "eigvalsh"] + fallback_linalg.__all__


def _np():
    from .. import numpy as np
    return np


def norm(x, ord=None, axis=None, keepdims=False):  # noqa: A002 (NumPy's name)
    """Matrix or vector norm (NumPy's ``ord`` values)."""
    np = _np()
    x = to_tensor(x)
    if isinstance(axis, list):
        axis = tuple(axis)
    if isinstance(axis, tuple) and len(axis) == 1:
        axis = axis[0]
    if axis is None and ord is None:
        return np.sqrt(np.sum(x * x, keepdims=keepdims))
    nd = getattr(x, "ndim", None)
    if axis is None:
        axis = tuple(range(nd)) if nd is not None and nd == 2 else 0 if nd == 1 else None
        if axis is None:
            raise ValueError("Improper number of dimensions to norm.")
    if isinstance(axis, numbers.Integral):
        return _vector_norm(np, x, ord, axis, keepdims)
    if len(axis) != 2:
        raise ValueError("Improper number of dimensions to norm.")
    return _matrix_norm(np, x, ord, tuple(axis), keepdims)


def _vector_norm(np, x, ord, axis, keepdims):  # noqa: A002
    if ord is None or ord == 2:
        return np.sqrt(np.sum(x * x, axis=axis, keepdims=keepdims))
    if ord == _onp.inf:
        return np.max(np.abs(x), axis=axis, keepdims=keepdims)
    if ord == -_onp.inf:
        return np.min(np.abs(x), axis=axis, keepdims=keepdims)
    if ord == 0:
        return np.sum(np.not_equal(x, 0).astype(x.dtype), axis=axis, keepdims=keepdims)
    if ord == 1:
        return np.sum(np.abs(x), axis=axis, keepdims=keepdims)
    if isinstance(ord, str):
        raise ValueError(f"Invalid norm order '{ord}' for vectors")
    return np.power(np.sum(np.power(np.abs(x), ord), axis=axis, keepdims=keepdims), 1.0 / ord)


def _matrix_norm(np, x, ord, axis, keepdims):  # noqa: A002
    r, c = axis
    if ord is None or ord == "fro":
        return np.sqrt(np.sum(x * x, axis=axis, keepdims=keepdims))
    if ord in (1, -1, _onp.inf, -_onp.inf):
        col = ord in (1, -1)
        inner_ax, outer_ax = (r, c) if col else (c, r)
        s = np.sum(np.abs(x), axis=inner_ax, keepdims=True)
        f = np.max if ord in (1, _onp.inf) else np.min
        res = f(s, axis=outer_ax, keepdims=True)
        if not keepdims:
            res = np.squeeze(res, axis=axis)
        return res
    if ord in (2, -2, "nuc"):
        nd = x.ndim
        perm = [d for d in range(nd) if d not in (r % nd, c % nd)] + [r % nd, c % nd]
        xt = np.transpose(x, perm)
        if xt.shape[-2] > xt.shape[-1]:
            xt = np.swapaxes(xt, -1, -2)
        s = svd(xt)[1]
        res = np.max(s, axis=-1) if ord == 2 else np.min(s, axis=-1) if ord == -2 else np.sum(s, axis=-1)
        if keepdims:
            res = np.expand_dims(np.expand_dims(res, min(r % nd, c % nd)), max(r % nd, c % nd))
        return res
    raise ValueError("Invalid norm order for matrices.")


def svd(a):
    """Reduced SVD of (..., M, N) with M <= N: ``(ut, l, v)`` with ``a = ut @ diag(l) @ v``."""
    return tuple(invoke("_npi_svd", [to_tensor(a)]))


def cholesky(a):
    """The lower Cholesky factor L of a symmetric positive-definite matrix (A = L L^T)."""
    return invoke("_linalg_potrf", [to_tensor(a)], lower=True)


def inv(a):
    """The inverse of each square matrix."""
    return invoke("_linalg_inverse", [to_tensor(a)])


def det(a):
    """The determinant of each square matrix."""
    return invoke("_linalg_det", [to_tensor(a)])


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
    np = _np()
    a = to_tensor(a)
    if ind <= 0:
        raise ValueError("Invalid ind argument.")
    outer, inner = a.shape[:ind], a.shape[ind:]
    n = int(_onp.prod(outer))
    if n != int(_onp.prod(inner)):
        raise GpundaError(f"tensorinv: prod(a.shape[:ind]) = {n} must equal "
                          f"prod(a.shape[ind:]) = {int(_onp.prod(inner))}")
    return np.reshape(inv(np.reshape(a, (n, n))), inner + outer)


def tensorsolve(a, b, axes=None):
    """The solution ``x`` of ``tensordot(a, x, x.ndim) = b``."""
    np = _np()
    a, b = tensors([a, b])
    if axes is not None:
        nd = a.ndim
        order = [k for k in range(nd) if k not in [ax % nd for ax in axes]] + [ax % nd for ax in axes]
        a = np.transpose(a, order)
    xshape = a.shape[b.ndim:]
    n = int(_onp.prod(xshape))
    m = int(_onp.prod(a.shape[:b.ndim]))
    if n != m:
        raise GpundaError(f"tensorsolve: the leading {b.ndim} axes of a ({m} elements) and "
                          f"the rest ({n}) must match")
    return np.reshape(solve(np.reshape(a, (m, n)), np.reshape(b, (m,))), xshape)
