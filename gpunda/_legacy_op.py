"""MXNet's deprecated Python operator interface: ``PythonOp``, ``NumpyOp``, ``NDArrayOp``.

Before ``CustomOp`` MXNet let a Python object be an operator: subclass ``NumpyOp`` (or
``NDArrayOp``), override ``forward(in_data, out_data)``, ``backward(out_grad, in_data,
out_data, in_grad)``, ``infer_shape``, ``list_arguments`` and ``list_outputs``, and
``op.get_symbol(*inputs, name=...)`` (or ``op(...)``) gives a Symbol node (op ``_Native``
or ``_NDArray``, param ``info`` naming the object). The results travel back through the
arrays the op writes in place: ``y[:] = ...``, ``dx /= ...``.

Here those nodes run on the Custom runtime (``operator.py``, op family ``ops/custom.py``):
the Python object is wrapped in a ``CustomOpProp`` whose operator calls the old-style
methods, so Executor, Module, CachedOp and autograd serve them as they serve ``Custom``.

- ``NumpyOp``: MXNet copies every array into a float32 host buffer, calls the op on the
  buffers and copies the outputs (or input gradients) back. Here inputs are host copies
  too (writing them changes nothing, as in MXNet); an output on the host is handed to
  the op directly (its own memory, nothing to copy back), one on a GPU gets a host buffer
  that is copied back after the call. With ``need_top_grad=False`` (loss layers)
  ``backward`` gets ``out_grad == []``.
- ``NDArrayOp``: the op gets the NDArrays themselves, on the call's device.
- Both compute in float32 only (MXNet's legacy operator default): another dtype is an
  error naming the argument.

Unlike MXNet, an exception in the op's Python code is raised (MXNet 1.9.1 prints a
NumpyOp's and leaves the outputs unwritten), and ``grad_req='add'`` works (MXNet refuses
it for these ops).
"""
from __future__ import annotations

import warnings

import numpy as np

from gpunda.base import GpundaError
from gpunda.operator import CustomOp, CustomOpProp

__all__ = ["PythonOp", "NumpyOp", "NDArrayOp", "prop_for_info"]

# info token -> the Python op it names. MXNet keeps every op that made a symbol alive
# (PythonOp._ref_holder), so a token is never reused for another object.
_LIVE = {}
_PROPS = {}     # (info, need_top_grad) -> the _LegacyProp serving it


class PythonOp:
    """Base class of the deprecated Python operators (use ``CustomOp`` in new code).

    Args:
        need_top_grad: what ``need_top_grad()`` returns by default: whether ``backward``
            reads the outputs' gradients (False for loss layers).
    """

    _ref_holder = []

    def __init__(self, need_top_grad=True):
        self.info_ = None
        self.need_top_grad_ = need_top_grad
        warnings.warn("PythonOp has been deprecated. Please use CustomOp", stacklevel=2)

    def __call__(self, *args, **kwargs):
        return self.get_symbol(*args, **kwargs)

    def get_symbol(self, *args, **kwargs):
        """The Symbol node calling this op on input Symbols ``args``/``kwargs``."""
        raise NotImplementedError("Must override this")

    def forward(self, in_data, out_data):
        """Write the outputs into ``out_data`` (by default: a copy of the first input)."""
        out_data[0][:] = in_data[0]

    def backward(self, out_grad, in_data, out_data, in_grad):
        """Write the inputs' gradients into ``in_grad`` (by default: ones)."""
        in_grad[0][:] = 1.0

    def infer_shape(self, in_shape):
        """(argument shapes, output shapes); by default one output shaped as the first
        argument."""
        return in_shape, [in_shape[0]]

    def list_outputs(self):
        """Output names."""
        return ["output"]

    def list_arguments(self):
        """Argument (input) names."""
        return ["data"]

    def need_top_grad(self):
        """Whether ``backward`` reads the outputs' gradients."""
        return self.need_top_grad_

    def _token(self):
        info = f"{id(self):x}"
        _LIVE[info] = self
        PythonOp._ref_holder.append(self)
        self.info_ = info
        return info


class NumpyOp(PythonOp):
    """A deprecated operator written with NumPy: ``forward``/``backward`` get float32 NumPy
    arrays and write their results into ``out_data``/``in_grad`` in place.

    An op holding state (arrays it keeps between calls) cannot serve several devices.
    """

    def __init__(self, need_top_grad=True):
        super().__init__(need_top_grad)
        warnings.warn("NumpyOp has been deprecated. Please use CustomOp", stacklevel=2)

    def get_symbol(self, *args, **kwargs):
        """The ``_Native`` Symbol node calling this op on input Symbols ``args``/``kwargs``
        (``name=`` names the node; missing inputs become variables ``<name>_<arg>``)."""
        from gpunda.symbol import _internal
        return _internal._Native(*args, info=self._token(),
                                 need_top_grad=bool(self.need_top_grad()), **kwargs)


class NDArrayOp(PythonOp):
    """A deprecated operator written with NDArrays: ``forward``/``backward`` get the
    NDArrays of the call and write their results into ``out_data``/``in_grad``."""

    def __init__(self, need_top_grad=True):
        super().__init__(need_top_grad)
        warnings.warn("NDArrayOp has been deprecated. Please use CustomOp", stacklevel=2)

    def get_symbol(self, *args, **kwargs):
        """The ``_NDArray`` Symbol node calling this op on input Symbols ``args``/``kwargs``."""
        from gpunda.symbol import _internal
        return _internal._NDArray(*args, info=self._token(), **kwargs)

    def declare_backward_dependency(self, out_grad, in_data, out_data):
        """Ids of the arrays ``backward`` reads (gpunda always provides all of them)."""
        deps = list(out_grad) if self.need_top_grad() else []
        return deps + list(in_data) + list(out_data)


# ---------------------------------------------------------------------------
# the Custom runtime's view of a legacy op

def prop_for_info(info, p):
    """The prop serving a ``_Native``/``_NDArray`` call whose ``info`` param is ``info``."""
    pyop = _LIVE.get(info)
    if pyop is None:
        raise GpundaError(f"Operator _Native/_NDArray: info={info!r} names no NumpyOp or "
                          f"NDArrayOp made in this process (a graph holding one runs only "
                          f"in the process whose get_symbol made it)")
    need = getattr(p, "need_top_grad", None)
    if need is None:
        need = bool(pyop.need_top_grad())
    key = (info, need)
    prop = _PROPS.get(key)
    if prop is None:
        prop = _PROPS[key] = _LegacyProp(pyop, need)
    return prop


class _LegacyProp(CustomOpProp):
    """A NumpyOp/NDArrayOp seen as a CustomOpProp."""

    def __init__(self, pyop, need_top_grad):
        super().__init__(need_top_grad)
        self.pyop = pyop
        kind = "NumpyOp" if isinstance(pyop, NumpyOp) else "NDArrayOp"
        self.label_ = f"{type(pyop).__name__} ({kind})"    # how errors name it

    def list_arguments(self):
        return list(self.pyop.list_arguments())

    def list_outputs(self):
        return list(self.pyop.list_outputs())

    def infer_shape(self, in_shape):
        ret = self.pyop.infer_shape(in_shape)
        if not isinstance(ret, (tuple, list)) or len(ret) != 2:
            raise GpundaError(f"{self.label_}.infer_shape must return (argument shapes, "
                              f"output shapes), got {ret!r}")
        return ret

    def infer_type(self, in_type):
        for name, t in zip(self.list_arguments(), in_type):
            if np.dtype(t) != np.float32:
                raise GpundaError(f"{self.label_}: argument {name!r} has dtype "
                                  f"{np.dtype(t).name}, but the deprecated NumpyOp/NDArrayOp "
                                  f"interface computes in float32 only (write a CustomOp "
                                  f"for other dtypes)")
        return ([np.float32] * len(self.list_arguments()),
                [np.float32] * len(self.list_outputs()), [])

    def create_operator(self, ctx, in_shapes, in_dtypes):
        if isinstance(self.pyop, NumpyOp):
            return _NumpyCall(self.pyop, self.need_top_grad_)
        return _NDArrayCall(self.pyop)


def _host_copy(x):
    return x.asnumpy()      # always a copy: what the op writes there goes nowhere


def _host_buffer(dst, req):
    """(buffer the op writes, whether it is ``dst``'s own memory)."""
    d = dst._data
    if (type(d) is np.ndarray and req in ("write", "inplace") and d.dtype == np.float32
            and d.flags.c_contiguous):
        return d, True
    return np.zeros(dst.shape, np.float32), False


class _NumpyCall(CustomOp):
    """Runs a NumpyOp's forward/backward on host float32 buffers."""

    def __init__(self, pyop, need_top_grad):
        super().__init__()
        self.pyop = pyop
        self.need_top_grad = need_top_grad

    def _write_back(self, dsts, reqs, bufs):
        for dst, req, (buf, shared) in zip(dsts, reqs, bufs):
            if not shared:
                self.assign(dst, req, buf)

    def forward(self, is_train, req, in_data, out_data, aux):
        bufs = [_host_buffer(o, r) for o, r in zip(out_data, req)]
        self.pyop.forward(in_data=[_host_copy(x) for x in in_data],
                          out_data=[b for b, _ in bufs])
        self._write_back(out_data, req, bufs)

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        bufs = [_host_buffer(g, r) for g, r in zip(in_grad, req)]
        self.pyop.backward(
            out_grad=[_host_copy(g) for g in out_grad] if self.need_top_grad else [],
            in_data=[_host_copy(x) for x in in_data],
            out_data=[_host_copy(y) for y in out_data],
            in_grad=[b for b, _ in bufs])
        self._write_back(in_grad, req, bufs)


class _NDArrayCall(CustomOp):
    """Runs an NDArrayOp's forward/backward on the call's NDArrays."""

    def __init__(self, pyop):
        super().__init__()
        self.pyop = pyop

    def forward(self, is_train, req, in_data, out_data, aux):
        self.pyop.forward(in_data=list(in_data), out_data=list(out_data))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        self.pyop.backward(out_grad=list(out_grad), in_data=list(in_data),
                           out_data=list(out_data), in_grad=list(in_grad))
