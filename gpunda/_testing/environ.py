"""Where tests run: default context and dtype, GPUs, environment variables, retries."""
from __future__ import annotations

import contextlib
import functools
import io
import os
import platform
import sys

import numpy as np

from gpunda.base import GpundaError

__all__ = ["default_context", "set_default_context", "default_dtype", "list_gpus",
           "get_cuda_compute_capability", "environment", "set_env_var", "retry",
           "discard_stderr", "is_cd_run", "is_aarch64_run", "has_tvm_ops", "is_op_runnable"]


def default_context():
    """The context tests run on: ``mx.current_context()``."""
    from gpunda.context import current_context
    return current_context()


def set_default_context(ctx):
    """Make ``ctx`` the default context, so that ``mx.current_context()`` and new arrays use it.

    As in MXNet, this is how a test module switches a whole suite to ``mx.gpu(0)``,
    and it holds for the calling thread. ``None`` goes back to the device
    ``GPUNDA_DEFAULT_DEVICE`` chooses.
    """
    from gpunda.context import _set_default_device
    _set_default_device(ctx)


def default_dtype():
    """The dtype of test data when none is given (float32)."""
    return np.float32


def list_gpus():
    """``range(n)`` for the ``n`` usable GPUs (empty without one)."""
    from gpunda.context import num_gpus
    return range(num_gpus())


def get_cuda_compute_capability(ctx):
    """Compute capability of the GPU of ``ctx`` as major * 10 + minor (e.g. 80).

    ``ValueError`` for a context that is not a GPU, as in MXNet.
    """
    if getattr(ctx, "device_type", None) != "gpu":
        raise ValueError(f"Expecting a gpu context to get cuda compute capability, while "
                         f"received ctx {ctx}")
    from gpunda.backends.discovery import compute_capability
    return compute_capability(ctx.device_id)


def _set_environ(values):
    for name, value in values.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = str(value)


@contextlib.contextmanager
def environment(*args):
    """Set environment variables for the body of a ``with`` block, then restore them.

    ``environment('NAME', 'value')`` or ``environment({'A': '1', 'B': None})``;
    None unsets a variable. The previous state comes back even when the body
    raises (after pending work finished, as MXNet's engine may still read it).
    """
    if len(args) == 1 and isinstance(args[0], dict):
        values = dict(args[0])
    elif len(args) == 2 and isinstance(args[0], str):
        values = {args[0]: args[1]}
    else:
        raise GpundaError(f"environment: expects one dict {{name: value}} or two arguments "
                          f"(name, value), got {args!r}")
    saved = {name: os.environ.get(name) for name in values}
    _set_environ(values)
    try:
        yield
    finally:
        from gpunda.ndarray.ndarray import waitall
        waitall()
        _set_environ(saved)


def set_env_var(key, val, default_val=""):
    """Set environment variable ``key`` to ``val``; returns the previous value or ``default_val``."""
    prev = os.environ.get(key, default_val)
    os.environ[key] = str(val)
    return prev


def retry(n):
    """Decorator: run a stochastic test up to ``n`` times until it raises no AssertionError."""
    if not isinstance(n, int) or n <= 0:
        raise GpundaError(f"retry: n={n!r} must be a positive int")

    def decorate(f):
        @functools.wraps(f)
        def wrapper(*args, **kwargs):
            from gpunda.ndarray.ndarray import waitall
            for i in range(n):
                try:
                    f(*args, **kwargs)
                    return
                except AssertionError:
                    if i == n - 1:
                        raise
                    waitall()
        return wrapper
    return decorate


@contextlib.contextmanager
def discard_stderr():
    """Silence standard error, C-level writes included, inside a ``with`` block.

    File descriptor 2 is pointed at the null device, and so is ``sys.stderr``'s
    own descriptor when it has another one (a captured stream).
    """
    fds = {2}
    try:
        fds.add(sys.stderr.fileno())
    except (AttributeError, io.UnsupportedOperation, ValueError):
        pass     # a virtual stream without a descriptor: fd 2 alone
    sys.stderr.flush()
    saved = {fd: os.dup(fd) for fd in sorted(fds)}
    try:
        with open(os.devnull, "w") as devnull:
            for fd in saved:
                os.dup2(devnull.fileno(), fd)
            try:
                yield
            finally:
                sys.stderr.flush()
                for fd, copy in saved.items():
                    os.dup2(copy, fd)
    finally:
        for copy in saved.values():
            os.close(copy)


def is_cd_run():
    """Whether this runs inside a Continuous Delivery job (``CD_JOB=1``)."""
    return os.environ.get("CD_JOB", 0) == "1"


def is_aarch64_run():
    """Whether this runs on an aarch64 machine."""
    return platform.machine() == "aarch64"


def has_tvm_ops():
    """False: gpunda has no TVM-generated operators (MXNet's ``USE_TVM_OP`` build)."""
    return False


def is_op_runnable():
    """True: without TVM operators every gpunda op runs on every device CUDA can drive."""
    return True
