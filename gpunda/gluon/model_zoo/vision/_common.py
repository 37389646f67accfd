"""What the vision models share: loading pretrained weights."""
from __future__ import annotations


def load_pretrained(net, name, ctx, root):
    """Load MXNet's published weights for model ``name`` into ``net`` (see ``model_store``)."""
    from gpunda.gluon.model_zoo.model_store import get_model_file
    net.load_parameters(get_model_file(name, root=root), ctx=ctx)
    return net
