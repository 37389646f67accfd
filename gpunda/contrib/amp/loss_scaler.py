"""MXNet's ``mxnet.contrib.amp.loss_scaler``: the dynamic loss scale of mixed-precision
training.

The scale starts at 2**16. Each ``has_overflow(params)`` call checks every gradient for inf or
NaN (``multi_all_finite``), makes the scale chosen after the previous check current, and picks
the next one: half the current after an overflow, double it (at most 2**24) after 2000 clean
checks in a row.
"""
from __future__ import annotations

import logging

from gpunda import autograd as ag
from gpunda.base import GpundaError
from gpunda.ndarray import multi_all_finite
from gpunda.ndarray import ndarray as nd

__all__ = ["LossScaler"]

_CHUNK = 200            # arrays per multi_all_finite call


class LossScaler:
    """Dynamic loss scaler for AMP; ``loss_scale`` is the current scale."""

    def __init__(self):
        self._loss_scale = 2. ** 16
        self._next_loss_scale = self._loss_scale
        self._max_loss_scale = 2. ** 24
        self._scale_seq_len = 2000
        self._unskipped = 0

    @property
    def loss_scale(self):
        return self._loss_scale

    def has_overflow(self, params):
        """Whether a gradient of ``params`` (Gluon Parameters) holds inf or NaN; updates the
        scale as the class describes."""
        grads = [p._grad[0] for p in params if p._grad is not None]
        if not grads:
            raise GpundaError("LossScaler.has_overflow: none of the parameters has a gradient "
                              "(grad_req='null' or not initialized)")
        with ag.pause():
            finite = nd.ones((1,), ctx=grads[0].context)
            for start in range(0, len(grads), _CHUNK):
                chunk = grads[start:start + _CHUNK]
                multi_all_finite(*chunk, num_arrays=len(chunk), init_output=False, out=finite)
        overflow = not bool(finite.asnumpy())
        self._loss_scale = self._next_loss_scale
        if overflow:
            self._next_loss_scale = self._loss_scale / 2.
            self._unskipped = 0
            logging.info("AMP: decreasing loss scale to %f", self._next_loss_scale)
        else:
            self._unskipped += 1
        if self._unskipped == self._scale_seq_len:
            self._unskipped = 0
            self._next_loss_scale = min(self._max_loss_scale, self._loss_scale * 2.)
            logging.info("AMP: increasing loss scale to %f", self._next_loss_scale)
        return overflow
