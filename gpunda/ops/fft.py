"""``contrib.fft`` / ``contrib.ifft``: MXNet's FFT over the last dim of 2-D or 4-D data,
with complex values stored as interleaved (real, imag) pairs in the last dim.

``fft`` maps real (..., d) to complex (..., 2d); ``ifft`` maps complex (..., 2d) to the
real part (..., d) of the *unnormalised* inverse transform (MXNet leaves out the 1/d).
Each is the other's gradient: the derivative of the interleaved forward transform of a
real signal is the real part of the unnormalised inverse transform of the gradient, and
the other way round. MXNet builds them only for its GPUs; here they run on every device.
"""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError
from gpunda.ops.registry import OpDef, Param, register

_PARAMS = [Param("compute_size", "int", 128)]    # cuFFT batching in MXNet; no effect here


def _complex_dtype(dtype):
    return np.complex128 if np.dtype(dtype) == np.float64 else np.complex64


def _check_ndim(name, x):
    if x.ndim not in (2, 4):
        raise GpundaError(f"Operator {name}: data must be 2-D or 4-D, got shape {x.shape}")


def _interleave(xp, z, dtype):
    out = xp.empty(z.shape[:-1] + (2 * z.shape[-1],), dtype=dtype)
    out[..., 0::2] = z.real
    out[..., 1::2] = z.imag
    return out


def _fft(xp, p, x):
    _check_ndim("_contrib_fft", x)
    z = xp.fft.fft(x.astype(_complex_dtype(x.dtype), copy=False), axis=-1)
    return _interleave(xp, z, x.dtype)


def _ifft(xp, p, x):
    _check_ndim("_contrib_ifft", x)
    if x.shape[-1] % 2:
        raise GpundaError(f"Operator _contrib_ifft: the last dim holds (real, imag) pairs and "
                          f"must be even, got shape {x.shape}")
    z = x[..., 0::2] + 1j * x[..., 1::2]
    d = z.shape[-1]
    # numpy's ifft divides by d; MXNet's (cuFFT's inverse) does not
    return (xp.fft.ifft(z.astype(_complex_dtype(x.dtype), copy=False), axis=-1).real * d
            ).astype(x.dtype, copy=False)


register(OpDef(
    "_contrib_fft", _fft, params=_PARAMS, gradient=lambda F, p, i, o, g: [F._contrib_ifft(g[0])],
    save=(), family="fft",
    doc="FFT of real data over its last dim; output (..., 2d) of interleaved (real, imag)."))
register(OpDef(
    "_contrib_ifft", _ifft, params=_PARAMS, gradient=lambda F, p, i, o, g: [F._contrib_fft(g[0])],
    save=(), family="fft",
    doc="Real part of the unnormalised inverse FFT of interleaved (real, imag) data over its "
        "last dim (no 1/d, as MXNet's)."))
