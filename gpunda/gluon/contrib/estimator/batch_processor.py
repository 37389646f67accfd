"""How the Estimator runs one batch: split it over the contexts, forward, loss, backward."""
from __future__ import annotations

from gpunda import autograd
from gpunda.gluon.utils import split_and_load

__all__ = ["BatchProcessor"]


class BatchProcessor:
    """The default batch logic of an Estimator; subclass it and override ``fit_batch`` /
    ``evaluate_batch`` to change how a batch is computed (both return
    ``(data, label, pred, loss)``, lists with one entry per context)."""

    def _get_data_and_label(self, batch, ctx, batch_axis=0):
        data = split_and_load(batch[0], ctx_list=ctx, batch_axis=batch_axis)
        label = split_and_load(batch[1], ctx_list=ctx, batch_axis=batch_axis)
        return data, label

    def evaluate_batch(self, estimator, val_batch, batch_axis=0):
        """Forward ``val_batch`` through ``estimator.val_net`` and ``val_loss``."""
        data, label = self._get_data_and_label(val_batch, estimator.context, batch_axis)
        pred = [estimator.val_net(x) for x in data]
        loss = [estimator.val_loss(y_hat, y) for y_hat, y in zip(pred, label)]
        return data, label, pred, loss

    def fit_batch(self, estimator, train_batch, batch_axis=0):
        """Forward and backward ``train_batch`` (the parameter update is a handler's job)."""
        data, label = self._get_data_and_label(train_batch, estimator.context, batch_axis)
        with autograd.record():
            pred = [estimator.net(x) for x in data]
            loss = [estimator.loss(y_hat, y) for y_hat, y in zip(pred, label)]
        for part in loss:
            part.backward()
        return data, label, pred, loss
