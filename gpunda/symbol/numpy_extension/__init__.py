"""MXNet's ``mx.sym.npx``: ``mx.npx``'s functions building graph nodes (each runs in
``symbolic_scope()``; see ``gpunda.symbol.numpy``)."""
from gpunda.symbol.numpy import _symbolic_attr

_made = {}


def __getattr__(attr):
    fn = _made.get(attr)
    return fn if fn is not None else _symbolic_attr("gpunda.numpy_extension", attr, _made)


from gpunda.symbol.numpy_extension import _op, _register  # noqa: E402,F401  (MXNet's submodules)
