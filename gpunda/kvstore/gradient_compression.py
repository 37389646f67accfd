"""MXNet 1.9.1's 2-bit gradient compression for KVStore pushes.

What MXNet does (src/kvstore/gradient_compression*.{h,cc}, comm.h, kvstore_dist.h):
each sender keeps a float32 residual per key (and, in a 'device' store, per source
array of the push). A push adds the gradient to the residual; where the residual
reaches ``threshold`` the value sent is ``+threshold`` (and the residual drops by it),
where it reaches ``-threshold`` the value sent is ``-threshold`` (the residual rises
by it), elsewhere 0. The three states take two bits (``11``, ``10``, ``00``), packed
16 to a float32 word: value ``j`` of a block of 16 sits in byte ``j // 4`` of the
word, at bits 7-6 for ``j % 4 == 0`` down to bits 1-0 for ``j % 4 == 3``. The
receiver unpacks the words back into ``+-threshold``/0 and sums.

MXNet 1.9.1 knows only the ``2bit`` type (``1bit`` came later, in 2.0): any other
type is "Unknown type for gradient compression".
"""
from __future__ import annotations

import numpy as np

from gpunda.backends import array_module
from gpunda.base import GpundaError

__all__ = ["GradientCompression", "quantize_2bit", "dequantize_2bit", "compressed_size"]

# values per packed float32 word (MXNet's GetCompressionFactor for 2bit)
_FACTOR = 16


def compressed_size(n):
    """How many float32 words hold ``n`` values packed 2 bits each (MXNet's GetCompressedSize)."""
    return -(-int(n) // _FACTOR)


def quantize_2bit(grad, residual, threshold):
    """Add ``grad`` (float32, any shape) into ``residual`` (flat float32, updated in
    place) and return the packed words: a float32 array of ``compressed_size(n)``
    values whose bytes hold the 2-bit codes, in NumPy or CuPy as ``grad`` is."""
    xp = array_module(residual)
    t = np.float32(threshold)
    residual += grad.reshape(-1)
    pos = residual >= t
    neg = residual <= -t
    # MXNet subtracts the threshold it sent, a float32 op on the residual (subtracting
    # the 0 of the other entries changes nothing)
    residual -= pos.astype(np.float32) * t
    residual += neg.astype(np.float32) * t
    n = residual.size
    codes = xp.zeros(compressed_size(n) * _FACTOR, dtype=np.uint8)
    codes[:n] = (pos.astype(np.uint8) * 3) | (neg.astype(np.uint8) * 2)
    quads = codes.reshape(-1, 4)
    packed = (quads[:, 0] << 6) | (quads[:, 1] << 4) | (quads[:, 2] << 2) | quads[:, 3]
    return xp.ascontiguousarray(packed.astype(np.uint8)).view(np.float32)


def dequantize_2bit(words, n, threshold):
    """The ``n`` float32 values (``+threshold``, ``-threshold`` or 0) the packed
    ``words`` (from ``quantize_2bit``) stand for; a flat array in ``words``' module."""
    xp = array_module(words)
    t = np.float32(threshold)
    raw = xp.ascontiguousarray(words).view(np.uint8)
    codes = xp.stack([(raw >> 6) & 3, (raw >> 4) & 3, (raw >> 2) & 3, raw & 3], axis=1)
    codes = codes.reshape(-1)[:n]
    # as MXNet's dequantize: both bits set -> +t, only the high bit -> -t, else 0
    return (codes == 3).astype(np.float32) * t - (codes == 2).astype(np.float32) * t


def _parse_threshold(value):
    # dmlc's float field: Python numbers and strings that read as a float
    try:
        return float(str(value).strip()) if not isinstance(value, (int, float)) else float(value)
    except ValueError:
        raise GpundaError(f"Invalid Parameter format for threshold expect float but "
                          f"value='{value}'") from None


class GradientCompression:
    """The compression a store applies to pushes: ``type`` (None until set) and
    ``threshold``, set from MXNet's parameter dict by ``set_params``."""

    def __init__(self):
        self.type = None
        self.threshold = 0.5
        self.residuals = {}      # (key, source) -> flat float32 NDArray on the source's device

    @property
    def active(self):
        """Whether pushes are compressed."""
        return self.type is not None

    def set_params(self, params):
        """Read MXNet's ``{'type': '2bit', 'threshold': t}`` (threshold defaults to 0.5;
        unknown keys are ignored, as dmlc's InitAllowUnknown does)."""
        if not isinstance(params, dict):
            # MXNet's _ctype_dict asserts this before reaching C++
            raise AssertionError(f"unexpected type for param_dict: {type(params)}")
        if "type" not in params:
            raise GpundaError("Required parameter type of string is not presented")
        threshold = _parse_threshold(params.get("threshold", 0.5))
        # MXNet checks the threshold before the type
        if not threshold > 0:
            raise GpundaError(f"Check failed: params.threshold > 0 ({threshold:g} vs. 0) : "
                              f"threshold must be greater than 0")
        kind = str(params["type"])
        if kind != "2bit":
            raise GpundaError(f"Unknown type for gradient compression {kind}")
        self.type = kind
        self.threshold = float(np.float32(threshold))

    def check_value(self, key, value):
        """Refuse what MXNet cannot compress: non-float32 values and row_sparse ones."""
        if getattr(value, "stype", "default") != "default":
            raise GpundaError(f"KVStore.push: key {key!r}: Gradient compression for row sparse "
                              f"storage type is not supported")
        if np.dtype(value.dtype) != np.float32:
            raise GpundaError(f"KVStore.push: key {key!r}: Gradient compression is only supported "
                              f"for float32 type of parameters, got {np.dtype(value.dtype).name}")

    def quantize(self, grad, residual):
        """Packed words for ``grad`` (a backend array) with ``residual`` updated in place."""
        return quantize_2bit(grad, residual, self.threshold)

    def dequantize(self, words, n):
        """The ``n`` values the packed ``words`` stand for."""
        return dequantize_2bit(words, n, self.threshold)

    # -- on a store's NDArrays ---------------------------------------------------------
    def residual_for(self, rkey, like):
        """The residual NDArray of ``rkey`` (zeros on ``like``'s context on first use)."""
        res = self.residuals.get(rkey)
        if res is None or res.context != like.context or res.size != like.size:
            from gpunda.ndarray import zeros
            res = self.residuals[rkey] = zeros((like.size,), ctx=like.context, dtype="float32")
        return res

    def pack_to_host(self, rkey, value):
        """The packed words of NDArray ``value`` (residual ``rkey``) as a NumPy array."""
        words = self.quantize(value._data, self.residual_for(rkey, value)._data)
        return np.ascontiguousarray(words.get() if hasattr(words, "get") else words)

    def reduce_local(self, key, parts, stored):
        """MXNet's CommDevice::ReduceCompressed: each source NDArray of a push is
        quantised with its own residual (even one already on the store's context), the
        packed words move to the store's context, and the dequantised values are summed."""
        from gpunda.ndarray.ndarray import _new
        ctx, n = stored.context, stored.size
        total = None
        for i, p in enumerate(parts):
            words = self.quantize(p._data, self.residual_for((key, i), p)._data)
            words = _new(words, p.context).as_in_context(ctx)
            vals = self.dequantize(words._data, n)
            total = vals if total is None else total + vals
        return _new(total.reshape(stored.shape), ctx)

    def allreduce(self, rkey, total, mpi):
        """Quantise NDArray ``total`` with residual ``rkey``, all-gather the packed words
        over ``mpi`` (``ceil(n/16)`` float32 words per rank) and return the sum of every
        rank's dequantised values, a NumPy array of ``total``'s shape."""
        host = self.pack_to_host(rkey, total)
        gathered = mpi.allgather(host) if mpi.size > 1 else host[None]
        acc = None
        for r in range(gathered.shape[0]):      # rank order: every rank sums alike
            v = self.dequantize(gathered[r], total.size)
            acc = v if acc is None else acc + v
        return acc.reshape(total.shape)
