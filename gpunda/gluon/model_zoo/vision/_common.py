"""What the vision models share: loading pretrained weights and a concatenating stack."""
from __future__ import annotations

from ...nn import HybridSequential


def load_pretrained(net, name, ctx, root):
    """Load MXNet's published weights for model ``name`` into ``net`` (see ``model_store``)."""
    from ..model_store import get_model_file
    net.load_parameters(get_model_file(name, root=root), ctx=ctx)
    return net


class HybridConcurrent(HybridSequential):
    """Runs every child on the same input and concatenates their outputs along ``axis``.

    The same block as MXNet's ``gluon.contrib.nn.HybridConcurrent``, which the model zoo
    builds its parallel branches from (DenseNet, SqueezeNet, Inception).
    """

    def __init__(self, axis=-1, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self.axis = axis

    def hybrid_forward(self, F, x):
        outs = [block(x) for block in self._children.values()]
        return F.concat(*outs, dim=self.axis)
