"""Training and recording modes, per thread: the state ``autograd.record()``/``pause()``/
``train_mode()``/``predict_mode()`` set and every layer reads (ops ask ``is_training()``
for Dropout and BatchNorm, ``invoke`` asks ``is_recording()`` on every call).

It lives in the base layer so the ops below the engine can read it; the engine's autograd
(gpunda/_engine/autograd.py) and the public ``gpunda.autograd`` re-export it.
"""
from __future__ import annotations

import contextvars

# The two flags are context variables: each thread has its own values and a new
# thread starts from the defaults (not recording, not training), as with a
# threading.local, but a read costs about a quarter as much, and invoke reads
# the recording flag on every op.
_recording = contextvars.ContextVar("gpunda_autograd_recording", default=False)
_training = contextvars.ContextVar("gpunda_autograd_training", default=False)
_is_rec = _recording.get
_is_train = _training.get
_set_rec = _recording.set
_set_train = _training.set


def is_recording():
    """Whether operations are being recorded for gradients (this thread)."""
    return _is_rec()


def is_training():
    """Whether ops run in training mode (Dropout active, BatchNorm batch stats)."""
    return _is_train()


def set_recording(is_recording):   # MXNet's parameter name (it shadows is_recording here)
    """Set recording on or off for this thread; returns the previous value."""
    prev = _is_rec()
    _set_rec(bool(is_recording))
    return prev


def set_training(train_mode):
    """Set training mode for this thread; returns the previous value."""
    prev = _is_train()
    _set_train(bool(train_mode))
    return prev


class _Scope:
    """``with`` block setting recording and/or training; restores both on exit."""

    __slots__ = ("_rec", "_train", "_prev")

    def __init__(self, is_record, train_mode):
        self._rec, self._train = is_record, train_mode
        self._prev = []     # a stack, so one scope object may be entered re-entrantly

    def __enter__(self):
        self._prev.append((_is_rec(), _is_train()))
        if self._rec is not None:
            _set_rec(self._rec)
        if self._train is not None:
            _set_train(self._train)
        return self

    def __exit__(self, *exc):
        rec, train = self._prev.pop()
        _set_rec(rec)
        _set_train(train)
        return False


def record(train_mode=True):
    """Scope that records ops for autograd (``with autograd.record():``)."""
    return _Scope(True, bool(train_mode))


def pause(train_mode=False):
    """Scope that stops recording (e.g. for a metric inside ``record``)."""
    return _Scope(False, bool(train_mode))


def train_mode():
    """Scope with training mode on, recording unchanged."""
    return _Scope(None, True)


def predict_mode():
    """Scope with training mode off, recording unchanged."""
    return _Scope(None, False)
