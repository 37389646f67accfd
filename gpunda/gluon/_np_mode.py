"""Gluon in NumPy mode (``npx.set_np()`` / ``@use_np``): what blocks and parameters do
differently. Parameters created in NumPy mode hold ``mx.np.ndarray`` values and
gradients; a hybridized block traces with np Symbols when its inputs are
``mx.np.ndarray`` and returns ``mx.np.ndarray`` when its graph's outputs are np Symbols;
in NumPy mode a block must return only ``mx.np.ndarray`` (TypeError otherwise, as MXNet).
"""
from __future__ import annotations

from gpunda.util import is_np_array, is_np_shape

__all__ = ["is_np_array", "is_np_shape", "to_np", "np_var", "is_np_input", "check_same_symbol_type",
           "check_all_np"]


_np_class = []     # mx.np.ndarray once looked up (every block call in NumPy mode asks)


def _np_cls():
    if not _np_class:
        from gpunda.numpy import ndarray
        _np_class.append(ndarray)
    return _np_class[0]


def to_np(arrays):
    """Make dense NDArrays ``mx.np.ndarray`` in place (same objects, same buffers)."""
    cls = _np_cls()
    for a in arrays:
        if a is not None and a.stype == "default" and type(a) is not cls:
            a.__class__ = cls
    return arrays


def np_var(sym):
    """An np Symbol over the graph of ``sym`` (a new object; ``sym`` is unchanged)."""
    from gpunda.symbol.numpy import _Symbol
    return _Symbol(sym._outputs)


def is_np_input(x):
    """Whether ``x`` is an ``mx.np.ndarray`` (only looks when gpunda.numpy is loaded)."""
    import sys
    mod = sys.modules.get("gpunda.numpy.multiarray")
    return mod is not None and isinstance(x, mod.ndarray)


def check_same_symbol_type(symbols):
    """True when every output Symbol is an np Symbol, False when none is; TypeError for a
    mix (one graph cannot give both kinds of arrays)."""
    import sys
    mod = sys.modules.get("gpunda.symbol.numpy")
    if mod is None:
        return False
    flags = {isinstance(s, mod._Symbol) for s in symbols if s is not None}
    if len(flags) > 1:
        raise TypeError("Found both classic symbol (mx.sym.Symbol) and numpy symbol "
                        "(mx.sym.np._Symbol) in outputs. Convert them to one kind: call "
                        "as_np_ndarray() on the classic ones for numpy ndarray outputs, or "
                        "as_nd_ndarray() on the numpy ones for classic outputs.")
    return flags == {True}


def check_all_np(out):
    """In NumPy mode a block's outputs must all be ``mx.np.ndarray`` (or np Symbols)."""
    if type(out) is _np_cls():
        return
    from gpunda.ndarray.ndarray import NDArray
    from gpunda.symbol.symbol import Symbol
    if isinstance(out, (NDArray, Symbol)):
        import sys
        sym_mod = sys.modules.get("gpunda.symbol.numpy")
        ok = isinstance(out, _np_cls()) or (sym_mod is not None and
                                            isinstance(out, sym_mod._Symbol))
        if not ok:
            raise TypeError(f"Block's output ndarrays/symbols must be of type "
                            f"`mxnet.numpy.ndarray` or `mxnet.symbol.numpy._Symbol`, while "
                            f"got output type {type(out)}")
    elif isinstance(out, (list, tuple)):
        for o in out:
            check_all_np(o)
