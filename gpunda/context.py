"""Devices as values: ``cpu(0)``, ``gpu(1)``; the default device and ``with ctx:`` scopes.

A ``Context`` is interned: ``cpu(0) is cpu(0)``, so the dispatcher compares
contexts by identity on its hot path. Its backend (NumPy or CuPy) is resolved
on first use, so creating ``gpu(0)`` on a machine without a GPU is fine; using
it raises a ``GpundaError``.
"""
from __future__ import annotations

import os
import threading
import warnings

from gpunda.base import GpundaError

__all__ = ["Context", "Device", "cpu", "gpu", "cpu_pinned", "current_context",
           "num_gpus", "gpu_memory_info", "default_device_choice"]

from gpunda.base import gpunda_log as _log

_DEVTYPE2ID = {"cpu": 1, "gpu": 2, "cpu_pinned": 3, "cpu_shared": 5}
_DEVID2TYPE = {v: k for k, v in _DEVTYPE2ID.items()}


class _DefaultCtx:
    """``Context.default_ctx``: MXNet's deprecated class property for the calling
    thread's current context, readable from the class or an instance. Writing it
    (on the class, through the metaclass) replaces the innermost ``with ctx:``
    scope, so that scope's exit restores what was there before, as in MXNet;
    outside any scope it becomes the thread's default until changed again."""

    _MSG = ("Context.default_ctx has been deprecated. Please use Context.current_context() "
            "instead. Please use test_utils.set_default_context to set a default context")

    def __get__(self, obj, cls=None):
        warnings.warn(self._MSG, DeprecationWarning, stacklevel=2)
        return current_context()

    @classmethod
    def set(cls, value):
        warnings.warn(cls._MSG, DeprecationWarning, stacklevel=3)
        if not isinstance(value, Context):
            raise GpundaError(f"Context.default_ctx: value={value!r} must be a Context")
        stack = _ctx_state.stack
        if stack:
            stack[-1] = value
        else:
            stack.append(value)     # a base entry no ``with`` pops


class _ContextMeta(type):
    def __setattr__(cls, name, value):
        if name == "default_ctx":
            _DefaultCtx.set(value)
        else:
            super().__setattr__(name, value)


class Context(metaclass=_ContextMeta):
    """A device: ``Context('gpu', 1)`` or ``Context(other_context)``.

    Hashable, comparable, prints as ``gpu(1)``, and usable as ``with ctx:``
    to make it the default for array creation in this thread.
    ``Context.default_ctx`` (deprecated in MXNet) reads or sets that default.
    """

    __slots__ = ("device_type", "device_id", "device_typeid", "_xp", "_backend", "_old")
    _interned: dict = {}
    _lock = threading.Lock()
    default_ctx = _DefaultCtx()
    devtype2str = dict(_DEVID2TYPE)    # MXNet's device type ids, both ways
    devstr2type = dict(_DEVTYPE2ID)

    def __new__(cls, device_type, device_id=0):
        if isinstance(device_type, Context):
            return device_type
        if isinstance(device_type, int):
            device_type = _DEVID2TYPE.get(device_type, device_type)
        key = (device_type, device_id)
        ctx = cls._interned.get(key)
        if ctx is not None:
            return ctx
        if device_type not in _DEVTYPE2ID:
            raise GpundaError(f"Context: device_type={device_type!r} is not one of "
                              f"{sorted(_DEVTYPE2ID)}")
        if isinstance(device_id, bool) or not isinstance(device_id, int) or device_id < 0:
            raise GpundaError(f"Context: device_id={device_id!r} must be an integer >= 0")
        with cls._lock:
            ctx = cls._interned.get(key)
            if ctx is None:
                ctx = object.__new__(cls)
                ctx.device_type = device_type
                ctx.device_id = device_id
                ctx.device_typeid = _DEVTYPE2ID[device_type]
                ctx._backend = None
                ctx._xp = None
                if device_type != "gpu":
                    from gpunda.backends import cpu_backend
                    ctx._backend = cpu_backend()
                    ctx._xp = ctx._backend.xp
                cls._interned[key] = ctx
        return ctx

    def __reduce__(self):
        return (Context, (self.device_type, self.device_id))

    def __copy__(self):
        return self

    def __deepcopy__(self, memo):
        return self

    @property
    def backend(self):
        """The backend object (array module, sparse module, copies, memory)."""
        b = self._backend
        if b is None:
            from gpunda.backends import gpu_backend
            b = gpu_backend(self.device_id)   # raises GpundaError when unusable
            self._xp = b.xp
            self._backend = b
        return b

    @property
    def xp(self):
        """The array module for this device: ``numpy`` or ``cupy``."""
        return self.backend.xp

    def __repr__(self):
        return f"{self.device_type}({self.device_id})"

    __str__ = __repr__

    def __eq__(self, other):
        return self is other or (isinstance(other, Context) and self.device_type == other.device_type
                                 and self.device_id == other.device_id)

    def __hash__(self):
        return hash((self.device_type, self.device_id))

    def __enter__(self):
        stack = _ctx_state.stack
        stack.append(self)
        return self

    def __exit__(self, *exc):
        _ctx_state.stack.pop()
        return False

    def empty_cache(self):
        """Return cached device memory to the driver (no-op on CPU)."""
        if self.device_type == "gpu":
            self.backend.empty_cache()


Device = Context


class _CtxState(threading.local):
    def __init__(self):
        self.stack = []


_ctx_state = _CtxState()


def cpu(device_id=0):
    """The CPU context; ``device_id`` is kept for MXNet compatibility."""
    return Context("cpu", device_id)


def cpu_pinned(device_id=0):
    """Page-locked CPU memory context (computes like ``cpu``)."""
    return Context("cpu_pinned", device_id)


def gpu(device_id=0):
    """The GPU context with CUDA ordinal ``device_id``."""
    return Context("gpu", device_id)


def num_gpus():
    """Number of usable GPUs (CUDA ordinals visible to this process)."""
    from gpunda.backends import discovery
    return discovery.usable_gpu_count()


def gpu_memory_info(device_id=0):
    """(free, total) bytes of GPU ``device_id``."""
    return gpu(device_id).backend.memory_info()


_default = None
_default_reason = None


def default_device_choice():
    """(Context, reason) chosen from ``GPUNDA_DEFAULT_DEVICE``; computed once."""
    global _default, _default_reason
    if _default is None:
        _default, _default_reason = _choose_default()
    return _default, _default_reason


def _reset_default_for_tests():
    global _default, _default_reason
    _default = _default_reason = None


def _choose_default():
    from gpunda.backends import discovery
    raw = os.environ.get("GPUNDA_DEFAULT_DEVICE", "auto")
    val = raw.strip().lower()
    require_gpu = os.environ.get("GPUNDA_REQUIRE_GPU", "0").strip() not in ("", "0", "false", "no")
    want = None
    if val == "cpu":
        return cpu(), "GPUNDA_DEFAULT_DEVICE=cpu"
    if val in ("gpu", "auto"):
        want = val
    elif val.startswith("gpu:") and val[4:].isdigit():
        want = int(val[4:])
    else:
        raise GpundaError(f"GPUNDA_DEFAULT_DEVICE={raw!r} is malformed; use cpu, gpu, gpu:N or auto")
    n, why_none = discovery.probe()
    if n == 0:
        msg = f"no usable GPU ({why_none}); using cpu(0)"
        if require_gpu:
            raise GpundaError(
                f"GPUNDA_REQUIRE_GPU={os.environ['GPUNDA_REQUIRE_GPU']} asks for a GPU, but none "
                f"is usable: {why_none}. Unset GPUNDA_REQUIRE_GPU (or set it to 0) to compute "
                f"on cpu(0) instead")
        if "GPUNDA_DEFAULT_DEVICE" in os.environ:
            _log.warning("gpunda: GPUNDA_DEFAULT_DEVICE=%s but %s", raw, msg)
        else:
            _log.info("gpunda: %s", msg)
        return cpu(), msg
    if want == "gpu":
        return gpu(0), "GPUNDA_DEFAULT_DEVICE=gpu"
    if isinstance(want, int):
        if want >= n:
            raise GpundaError(f"GPUNDA_DEFAULT_DEVICE={raw!r}: only {n} GPU(s) visible (0..{n - 1})")
        return gpu(want), f"GPUNDA_DEFAULT_DEVICE={raw}"
    best = discovery.most_free_gpu()
    return gpu(best), f"auto: gpu({best}) has the most free memory"


def current_context():
    """The innermost ``with ctx:`` context of this thread, else the default device."""
    stack = _ctx_state.stack
    if stack:
        return stack[-1]
    d = _default
    if d is None:
        d = default_device_choice()[0]
    return d


def _set_default_device(ctx):
    """Make ``ctx`` this thread's default device, as MXNet's ``Context._default_ctx.value``.

    It sits at the bottom of the thread's ``with ctx:`` stack, so scopes still
    win and unwind back to it; None removes it (the environment's choice again).
    """
    st = _ctx_state
    if getattr(st, "has_base", False):
        st.stack.pop(0)
    st.has_base = ctx is not None
    if ctx is not None:
        st.stack.insert(0, Context(ctx))


def shares_memory_space(a, b):
    """Whether arrays on contexts ``a`` and ``b`` can meet in one op without a copy.

    Host memory is one in MXNet: ``cpu(0)``, ``cpu(1)`` and ``cpu_pinned(0)`` mix
    freely; a GPU only meets itself.
    """
    return a is b or (a.device_type != "gpu" and b.device_type != "gpu")


from gpunda.base import check_call, classproperty, with_metaclass  # noqa: E402,F401  (in MXNet's module)
