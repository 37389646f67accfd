"""``mx.contrib.autograd``: MXNet's first autograd API, kept for old code.

Here "training" means recording and training mode together: ``train_section()``
turns both on, ``test_section()`` both off. Everything runs on gpunda's
autograd (gpunda/autograd.py); this module only adapts the calling style.
"""
from __future__ import annotations

import functools

from gpunda import autograd as _ag
from gpunda.base import GpundaError, string_types
from gpunda.ndarray import NDArray, zeros_like

__all__ = ["set_is_training", "TrainingStateScope", "train_section", "test_section",
           "mark_variables", "backward", "compute_gradient", "grad_and_loss", "grad",
           "NDArray", "zeros_like", "string_types"]


def set_is_training(is_train):
    """Turn recording and training mode on or off together; returns the previous
    recording state."""
    _ag.set_training(is_train)
    return _ag.set_recording(is_train)


class TrainingStateScope:
    """``with`` block that sets recording and training to ``enter_state`` and
    restores the previous state on exit."""

    def __init__(self, enter_state):
        self._enter_state = bool(enter_state)
        self._prev = None

    def __enter__(self):
        self._prev = set_is_training(self._enter_state)

    def __exit__(self, ptype, value, trace):
        if self._prev != self._enter_state:
            set_is_training(self._prev)


def train_section():
    """Scope that records and runs ops in training mode (``with train_section():``)."""
    return TrainingStateScope(True)


def test_section():
    """Scope that neither records nor trains, e.g. for evaluation inside train_section."""
    return TrainingStateScope(False)


def mark_variables(variables, gradients, grad_reqs="write"):
    """Mark NDArrays ``variables`` (a list) whose gradients go into ``gradients``;
    ``grad_reqs`` is 'write', 'add' or 'null', one for all or one per variable."""
    _ag.mark_variables(variables, gradients, grad_reqs)


def backward(outputs, out_grads=None, retain_graph=False):
    """Gradients of the list ``outputs`` into the marked variables' gradient arrays.

    ``out_grads`` gives one head gradient per output (None: ones), as the list
    form of ``autograd.backward``; ops run in training mode.
    """
    if not isinstance(outputs, (list, tuple)):
        raise GpundaError(f"contrib.autograd.backward: outputs must be a list or tuple of "
                          f"NDArrays, got {type(outputs).__name__}")
    if out_grads is not None and len(out_grads) != len(outputs):
        raise GpundaError(f"contrib.autograd.backward: {len(out_grads)} out_grads for "
                          f"{len(outputs)} outputs")
    _ag.backward(list(outputs), None if out_grads is None else list(out_grads),
                 retain_graph=retain_graph, train_mode=True)


def compute_gradient(outputs):
    """Deprecated name of ``backward(outputs)``."""
    backward(outputs)


def grad_and_loss(func, argnum=None):
    """Wrap ``func`` so that calling it returns ``(gradients, outputs)``.

    ``argnum`` (an int or a list of ints) picks the arguments to differentiate;
    by default all of them. Each must be an NDArray.
    """
    @functools.wraps(func)
    def wrapped(*args):
        variables = args
        if argnum is not None:
            picked = argnum if isinstance(argnum, list) else [argnum]
            variables = [args[i] for i in picked]
        for i, x in enumerate(variables):
            if not isinstance(x, NDArray):
                raise GpundaError(f"grad_and_loss: argument {i} must be an NDArray, got "
                                  f"{type(x).__name__}")
        grads = [zeros_like(x) for x in variables]
        mark_variables(variables, grads)
        with train_section():
            outputs = func(*args)
        compute_gradient([outputs] if isinstance(outputs, NDArray) else outputs)
        return grads, outputs
    return wrapped


def grad(func, argnum=None):
    """Wrap ``func`` so that calling it returns the gradients of its arguments
    (see ``grad_and_loss``)."""
    grad_with_loss = grad_and_loss(func, argnum)

    @functools.wraps(grad_with_loss)
    def wrapped(*args):
        return grad_with_loss(*args)[0]
    return wrapped
