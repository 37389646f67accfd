"""Errors an op finds while running, reported where MXNet reports them.

NOTE [Deferred op errors]
MXNet checks parameters and shapes when an op is called, but the checks inside
a kernel (``scale > 0`` in the normal sampler, ...) fail later, on the engine's
worker: the call returns arrays, the error travels with them into every op that
reads them, and it is raised at the first ``wait_to_read``/``asnumpy``/``waitall``
on any of them, once (then it is cleared, for all of them together).

gpunda runs ops at once, so it keeps that contract like this:

- An op body raises ``DeferredOpError(message, result)``: ``result`` is what
  its outputs hold (MXNet leaves them undefined; here NaN, or 0 for integers).
- ``imperative.invoke_parsed`` catches it (a try block costs nothing in Python
  3.11 until something is raised) and returns NDArrays whose payload is a
  ``Poisoned`` array: shape and dtype of the result, sharing one ``Failure``.
- Structural use (shape, indexing, reshape) of a Poisoned array gives Poisoned
  views. Reading its values raises the failure's error and marks it reported.
  When that happens inside an op, ``invoke_parsed`` catches it, takes the
  report back, runs the op on the stand-in values and poisons its outputs with
  the same Failure, so the error follows the data as in MXNet.
- ``waitall`` raises the first unreported failure and marks every one reported.
- A failed sampler also poisons its device's random generator, as the failure
  lands on MXNet's random resource: later samplers on that device fail with the
  same error until it is reported (``DeferredOpError(resource=ctx)``,
  ``resource_failure``). A CachedOp plan step defers the same way
  (``CachedOp._call_step``), and an Executor's outputs take the poisoned result,
  so ``forward`` returns and the first read of an output raises.
- Once reported, a Poisoned array reads as its stand-in values.
"""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError
from gpunda._core import bf16 as _bf16

__all__ = ["DeferredOpError", "Poisoned", "Failure", "undefined_like"]


class DeferredOpError(GpundaError):
    """Raised by an op body for an error MXNet's kernel reports at the next wait.

    ``result``: the op's outputs as they stand after the failure (one array or a
    tuple), so later ops and views get their shapes.
    """

    def __init__(self, message, result=None, resource=None):
        super().__init__(message)
        self.result = result
        self.failure = None
        self.resource = resource    # the context whose random generator the failure poisons


class Failure:
    """One failed op's error, shared by every array it reached."""

    __slots__ = ("message", "reported")

    def __init__(self, message):
        self.message = message
        self.reported = False

    def raise_(self, report=False):
        """Raise the error; ``report``: it reaches the caller (a wait), so it is cleared."""
        if report:
            self.reported = True
        e = DeferredOpError(self.message)
        e.failure = self
        raise e


_pending = []   # failures not reported yet, for waitall


def undefined_like(xp, shape, dtype):
    """The stand-in values of a failed op's output: NaN for floats, 0 otherwise."""
    dtype = np.dtype(dtype)
    if dtype.kind in "fc" or _bf16.is_bf16(dtype):
        return xp.full(shape, np.nan, dtype=dtype)
    return xp.zeros(shape, dtype=dtype)


class Poisoned:
    """Backend-array stand-in carrying a Failure; its values are unreadable until the
    failure has been reported."""

    __slots__ = ("fill", "failure")
    __array_priority__ = 10000.0

    def __init__(self, fill, failure):
        self.fill, self.failure = fill, failure

    # -- structure: readable without the values ------------------------------------
    shape = property(lambda self: self.fill.shape)
    dtype = property(lambda self: self.fill.dtype)
    ndim = property(lambda self: self.fill.ndim)
    size = property(lambda self: self.fill.size)
    base = None

    def _view(self, arr):
        return Poisoned(arr, self.failure) if not self.failure.reported else arr

    def __getitem__(self, key):
        return self._view(self.fill[_unpoison(key)])

    def reshape(self, *shape, **kwargs):
        return self._view(self.fill.reshape(*shape, **kwargs))

    def __len__(self):
        return len(self.fill)

    def __repr__(self):
        return f"<values of a failed op {self.shape}: {self.failure.message}>"

    # -- values: raise until reported ------------------------------------------------
    def _values(self):
        if not self.failure.reported:
            self.failure.raise_()
        return self.fill

    def __array__(self, dtype=None, copy=None):
        v = self._values()
        v = v if isinstance(v, np.ndarray) else v.get()
        return v if dtype is None else v.astype(dtype)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        inputs = tuple(_unpoison(x) for x in inputs)
        if "out" in kwargs:
            kwargs["out"] = tuple(_unpoison(x) for x in kwargs["out"])
        return getattr(ufunc, method)(*inputs, **kwargs)

    def __array_function__(self, func, types, args, kwargs):
        return func(*_unpoison(args), **_unpoison(kwargs))

    def __setitem__(self, key, value):
        self._values()[_unpoison(key)] = _unpoison(value)

    def __getattr__(self, name):
        if name.startswith("__") and name not in ("__cuda_array_interface__", "__dlpack__",
                                                   "__dlpack_device__"):
            raise AttributeError(name)
        return getattr(self._values(), name)

    def __bool__(self):
        return bool(self._values())

    def __float__(self):
        return float(self._values())

    def __int__(self):
        return int(self._values())

    def __index__(self):
        return self._values().__index__()


def _binary(name):
    def f(self, other):
        return getattr(self._values(), name)(_unpoison(other))
    f.__name__ = name
    return f


for _n in ("add", "sub", "mul", "truediv", "floordiv", "mod", "pow", "matmul", "and", "or",
           "xor", "lshift", "rshift", "lt", "le", "gt", "ge", "eq", "ne"):
    for _form in (f"__{_n}__", f"__r{_n}__", f"__i{_n}__"):
        if _form in ("__rlt__", "__rle__", "__rgt__", "__rge__", "__req__", "__rne__",
                     "__ilt__", "__ile__", "__igt__", "__ige__", "__ieq__", "__ine__"):
            continue
        setattr(Poisoned, _form, _binary(_form))
for _n in ("__neg__", "__pos__", "__abs__", "__invert__"):
    setattr(Poisoned, _n, lambda self, _n=_n: getattr(self._values(), _n)())
Poisoned.__hash__ = object.__hash__


def _unpoison(x):
    """``x`` with Poisoned arrays replaced by their values (raising if unreported)."""
    if type(x) is Poisoned:
        return x._values()
    if isinstance(x, tuple):
        return tuple(_unpoison(v) for v in x)
    if isinstance(x, list):
        return [_unpoison(v) for v in x]
    if isinstance(x, dict):
        return {k: _unpoison(v) for k, v in x.items()}
    return x


# -- used by imperative.invoke_parsed and the NDArray wait functions ------------------
def poison_outputs(e, arrays, rerun):
    """The outputs to return for an op that raised DeferredOpError ``e``.

    An op body's own error carries its result; an error that came from reading a
    Poisoned input is taken back (not reported yet), the op is run on the inputs'
    stand-in values (``rerun(arrays)``) and its outputs share that failure.
    """
    failure = e.failure
    if failure is None:         # the op's own error: a new failure
        failure = Failure(str(e))
        _pending[:] = [f for f in _pending if not f.reported]   # forget the reported ones
        _pending.append(failure)
        if e.resource is not None:
            _resource_failures[e.resource] = failure
    if e.result is not None:
        res = e.result
    else:                       # a Poisoned input was read: the failure travels on
        # other Poisoned inputs may carry other failures: the first one read wins, as
        # in MXNet (the op takes the first failed input's error)
        res = rerun([x.fill if type(x) is Poisoned else x for x in arrays])
    if isinstance(res, (tuple, list)):
        return type(res)(Poisoned(r, failure) for r in res)
    return Poisoned(res, failure)


def failed_input(arrays):
    """A DeferredOpError for the first Poisoned array in ``arrays`` (None if there is none)."""
    for a in arrays:
        if type(a) is Poisoned:
            e = DeferredOpError(a.failure.message)
            e.failure = a.failure
            return e
    return None


def host_values(data):
    """``asnumpy``/``wait_to_read`` on a Poisoned payload: report its failure if it is
    still pending, else give the stand-in values."""
    if not data.failure.reported:
        data.failure.raise_(report=True)
    return data.fill


def raise_pending():
    """``waitall``: raise the first unreported failure; every pending one counts as reported."""
    first = next((f for f in _pending if not f.reported), None)
    for f in _pending:
        f.reported = True
    _pending.clear()
    if first is not None:
        first.raise_()


_resource_failures = {}    # context -> the Failure its random generator carries


def resource_failure(ctx):
    """The unreported Failure ``ctx``'s random generator carries, or None."""
    f = _resource_failures.get(ctx)
    if f is not None and f.reported:
        del _resource_failures[ctx]
        return None
    return f
