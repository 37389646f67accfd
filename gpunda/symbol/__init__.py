"""Symbolic graphs (MXNet's ``mx.sym``): ``var``, ``Group``, ``sym.<Op>``, JSON load/save.

``sym.<Op>`` functions are generated from the op registry, like ``nd.<Op>``;
hidden ops (``_plus_scalar``) live in ``sym.op`` / ``sym._internal``.
"""
from __future__ import annotations

from gpunda.symbol import symbol as _symbol
from gpunda.symbol.symbol import (Symbol, var, Variable, Group, load, load_json, fromjson,  # noqa: F401
                     op, _internal)
from gpunda.symbol.executor import Executor  # noqa: F401

_symbol._populate(globals())
Symbol.reshape = _symbol._reshape_method


def _creation(opname, where, **kwargs):
    try:
        fn = _symbol.lookup(opname)
    except Exception:
        raise _symbol.GpundaError(f"sym.{where}: operator {opname} is not registered") from None
    return fn(**{k: v for k, v in kwargs.items() if v is not None})


def zeros(shape, dtype=None, name=None, **kwargs):
    """A symbol of zeros of ``shape`` (MXNet's ``sym.zeros``)."""
    return _creation("_zeros", "zeros", shape=shape, dtype=dtype, name=name, **kwargs)


def ones(shape, dtype=None, name=None, **kwargs):
    """A symbol of ones of ``shape`` (MXNet's ``sym.ones``)."""
    return _creation("_ones", "ones", shape=shape, dtype=dtype, name=name, **kwargs)


def full(shape, val, dtype=None, name=None, **kwargs):
    """A symbol filled with ``val`` (MXNet's ``sym.full``)."""
    return _creation("_full", "full", shape=shape, value=val, dtype=dtype, name=name, **kwargs)


def arange(start, stop=None, step=1.0, repeat=1, name=None, dtype=None, **kwargs):
    """Evenly spaced values (MXNet's ``sym.arange``)."""
    return _creation("_arange", "arange", start=start, stop=stop, step=step, repeat=repeat,
                     name=name, dtype=dtype, **kwargs)


def eye(N, M=0, k=0, dtype=None, name=None, **kwargs):
    """An N x M symbol with ones on diagonal ``k`` (MXNet's ``sym.eye``)."""
    return _creation("_eye", "eye", N=N, M=M, k=k, dtype=dtype, name=name, **kwargs)


def linspace(start, stop, num, endpoint=True, name=None, dtype=None):
    """``num`` evenly spaced values from ``start`` to ``stop`` (inclusive when ``endpoint``),
    float32 unless ``dtype`` says otherwise (MXNet's ``sym.linspace``, a ``_linspace`` node)."""
    import numpy as np
    return _creation("_linspace", "linspace", start=start, stop=stop, num=num,
                     endpoint=endpoint, name=name, dtype=np.float32 if dtype is None else dtype)


def split_v2(ary, indices_or_sections, axis=0, squeeze_axis=False):
    """Split a Symbol along ``axis`` into ``indices_or_sections`` equal parts (an int) or
    at the given indices (a tuple), as ``numpy.split``; MXNet's ``sym.split_v2``."""
    import numbers
    if isinstance(indices_or_sections, numbers.Integral):
        indices, sections = (), int(indices_or_sections)
    elif isinstance(indices_or_sections, (tuple, list)):
        indices, sections = (0,) + tuple(int(i) for i in indices_or_sections), 0
    else:
        raise ValueError(f"split_v2: indices_or_sections must be an int or a tuple, got "
                         f"{type(indices_or_sections).__name__}")
    return _symbol.lookup("_split_v2")(ary, indices=indices, axis=axis,
                                       squeeze_axis=squeeze_axis, sections=sections)


def histogram(a, bins=10, range=None, **kwargs):   # noqa: A002 (MXNet's parameter name)
    """Counts and bin edges of ``a`` (MXNet's ``sym.histogram``): ``bins`` a Symbol of
    edges, or an int with a ``range`` (a symbol cannot take NumPy's data-dependent range)."""
    import numbers
    from gpunda.symbol.symbol import Symbol
    if isinstance(bins, Symbol):
        return _symbol.lookup("_histogram")(a, bins, **kwargs)
    if isinstance(bins, numbers.Integral) and not isinstance(bins, bool):
        if range is None:
            raise ValueError("null range is not supported in symbol mode")
        return _symbol.lookup("_histogram")(a, bin_cnt=int(bins), range=tuple(range), **kwargs)
    raise ValueError("bins argument should be either an integer or an NDArray")


def reset_arrays(*data, **kwargs):
    """MXNet's ``reset_arrays`` zeroes NDArrays in place; as a graph node it would have no
    outputs (MXNet 1.9.1 crashes building one). Use ``nd.reset_arrays``."""
    from gpunda.base import NotImplementedForGpunda
    raise NotImplementedForGpunda("sym.reset_arrays (an op without outputs) is not supported "
                                  "in a Symbol graph; use nd.reset_arrays on NDArrays")


def __getattr__(name):
    if name in ("register", "numpy_extension"):    # MXNet's submodules, loaded on first use
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    if name in ("np", "numpy", "npx"):     # mx.sym.np / mx.sym.npx (symbol/numpy.py)
        # import_module, not `from . import numpy`: that probes this __getattr__ again
        import importlib
        _np_sym = importlib.import_module(f"{__name__}.numpy")
        return _np_sym if name != "npx" else _np_sym.npx
    # ops registered after import (custom ops) are looked up on demand
    try:
        return _symbol.lookup(name)
    except Exception:
        raise AttributeError(f"module 'gpunda.symbol' has no attribute {name!r}") from None


def __dir__():
    # the submodules __getattr__ loads on use are listed, as MXNet's dir(mx.sym) lists them
    return sorted(set(globals()) | {"register", "numpy_extension", "np", "numpy", "npx"})


import builtins as _builtins  # noqa: E402


def _binary_fn(fname, sym_op, scalar_op, rscalar_op, pyop):
    """``sym.<fname>(left, right)`` over Symbols and numbers, as MXNet's symbol.py."""
    from gpunda.base import GpundaTypeError, numeric_types as num   # (float, int, np.generic)

    def fn(left, right):
        if isinstance(left, Symbol) and isinstance(right, Symbol):
            return _symbol.lookup(sym_op)(left, right)
        if isinstance(left, Symbol) and isinstance(right, num):
            return _symbol.lookup(scalar_op)(left, scalar=right)
        if isinstance(right, Symbol) and isinstance(left, num):
            return _symbol.lookup(rscalar_op)(right, scalar=left)
        if isinstance(left, num) and isinstance(right, num):
            return pyop(left, right)
        # MXNet's class for any other pair of operand types
        raise GpundaTypeError(f"{fname}: types ({type(left).__name__}, "
                              f"{type(right).__name__}) not supported")
    fn.__name__ = fn.__qualname__ = fname
    fn.__doc__ = f"Element-wise {fname} of Symbols and/or numbers (no broadcasting)."
    return fn


# builtins: this namespace's max/min are the reduction ops
maximum = _binary_fn("maximum", "_Maximum", "_maximum_scalar", "_maximum_scalar", _builtins.max)
minimum = _binary_fn("minimum", "_Minimum", "_minimum_scalar", "_minimum_scalar", _builtins.min)
hypot = _binary_fn("hypot", "_hypot", "_hypot_scalar", "_hypot_scalar",
                   lambda a, b: (a * a + b * b) ** 0.5)
power = _binary_fn("power", "_Power", "_power_scalar", "_rpower_scalar", lambda a, b: a ** b)
pow = power  # noqa: A001  (MXNet's name)


from gpunda.symbol import namespaces as _namespaces  # noqa: E402

_mods = _namespaces.build(_symbol.lookup, Symbol)
contrib, linalg, image, sparse = (_mods[k] for k in ("contrib", "linalg", "image", "sparse"))
from gpunda.symbol import control_flow as _control_flow  # noqa: E402
for _cf in _control_flow.__all__ + list(_control_flow._MXNET_HELPERS):
    setattr(contrib, _cf, getattr(_control_flow, _cf))
from gpunda.symbol import random  # noqa: E402,F401,A001  (mx.sym.random: symbol/random.py)


def _rand_zipfian(true_classes, num_sampled, range_max):
    """``sym.contrib.rand_zipfian``: nd.contrib.rand_zipfian's graph (samples, expected
    counts of the true classes, expected counts of the samples)."""
    from gpunda.ndarray._contrib_extra import zipfian_counts
    return zipfian_counts(lambda lo, hi, shape, dtype: random.uniform(lo, hi, shape=shape,
                                                                       dtype=dtype),
                          true_classes, num_sampled, range_max)


_rand_zipfian.__name__ = "rand_zipfian"
contrib.rand_zipfian = _rand_zipfian
from gpunda.symbol import _contrib_names  # noqa: E402
_contrib_names.extend(contrib, _symbol)
symbol = _symbol

# MXNet's generated op modules, under their names (mx.sym.gen_op.<op>, ...)
gen_op, gen__internal = op, _internal
gen_contrib, gen_linalg, gen_sparse, gen_image = contrib, linalg, sparse, image
gen_random = _mods["gen_random"]
if not hasattr(op, "reset_arrays"):
    op.reset_arrays = reset_arrays
from gpunda.ops import backward_names as _backward_names  # noqa: E402
_backward_names.add_stubs(_internal, "mxnet.symbol._internal")     # MXNet's _backward_* ops: named, and say why not

# what the layers below call on Symbols (NOTE [Upward hooks] in gpunda/_core/hooks.py)
from gpunda._core import hooks as _hooks  # noqa: E402


def _infer_graph(sym, given_shapes, given_types, var_shape):
    # inference loads on first use (symbol/infer.py)
    from gpunda.symbol.infer import infer_graph
    return infer_graph(sym, given_shapes, given_types, var_shape)


def _symbol_from_json(text):
    from gpunda.symbol.json_io import from_json
    return from_json(text)


_hooks.Symbol = Symbol
_hooks.infer_graph = _infer_graph
_hooks.var_shape = _symbol._var_shape
_hooks.var_dtype = _symbol._var_dtype
_hooks.symbol_from_json = _symbol_from_json


def _subgraph_api():
    # partitioning loads on first use
    from gpunda._frontend import subgraph
    return subgraph


_hooks.subgraph_api = _subgraph_api

# the __future__ import binds `annotations`; MXNet's namespace has no such name (dir())
del annotations
