"""MXNet's ``mx.optimizer.contrib``: GroupAdaGrad."""
from __future__ import annotations

from gpunda.base import GpundaError
from gpunda.optimizer.optimizer import Optimizer, register

__all__ = ["GroupAdaGrad"]


@register
class GroupAdaGrad(Optimizer):
    """AdaGrad with one accumulated squared-gradient value per row of a 2-D weight.

    Each step adds the row means of ``grad**2`` (after ``rescale_grad`` and
    ``clip_gradient``) to the history (shape ``(rows, 1)``) and subtracts
    ``lr * grad / sqrt(history + eps)``. Weight decay is not supported (MXNet's
    neither). A row_sparse gradient runs the ``_contrib_group_adagrad_update``
    operator, touching only the rows it holds.

    Args:
        eps: added under the square root so that a zero history does not divide by 0.
    """

    def __init__(self, eps=1e-5, **kwargs):
        super().__init__(**kwargs)
        self.float_stable_eps = eps

    def create_state(self, index, weight):
        if len(weight.shape) != 2:
            raise GpundaError(f"GroupAdaGrad: weight {index!r} has shape {tuple(weight.shape)}; "
                              f"GroupAdaGrad needs a 2-D weight")
        from gpunda.ndarray import zeros
        return zeros((weight.shape[0], 1), weight.context, stype=weight.stype)

    def update(self, index, weight, grad, state):
        from gpunda import ndarray as nd
        self._update_count(index)
        lr = self._get_lr(index)
        wd = self._get_wd(index)
        if wd != 0:
            raise GpundaError(f"GroupAdaGrad: weight decay is not supported (wd={wd} for "
                              f"weight {index!r})")
        if grad.stype == "row_sparse":
            kwargs = {"epsilon": self.float_stable_eps, "rescale_grad": self.rescale_grad}
            if self.clip_gradient:
                kwargs["clip_gradient"] = self.clip_gradient
            nd.contrib.group_adagrad_update(weight, grad, state, out=weight, lr=lr, **kwargs)
            return
        g = grad * self.rescale_grad
        if self.clip_gradient is not None:
            g = nd.clip(g, -self.clip_gradient, self.clip_gradient)
        state[:] += nd.mean(nd.square(g), axis=1, keepdims=True)
        weight[:] -= lr * g / nd.sqrt(state + self.float_stable_eps)
