"""Slots the lower layers call and the upper layers fill, at import.

NOTE [Upward hooks]
Layers import downward only (docs/architecture.md): base, devices, ops, engine, front
ends, libraries, tools. A few calls must still go up: the engine hands gradients back as
NDArrays and runs create_graph rules through the ``nd`` namespace; a control-flow op runs
its subgraph as a CachedOp and infers shapes inside it with the Symbol machinery; a
Custom op calls user Python with NDArrays; a sparse op wraps storage as an NDArray; the
C-API stand-in waits on every array and partitions Symbols; while mx.profiler records,
array creation and Custom ops' Python report to it. Each of those callees is a slot here, set once by
the module that owns it when that module is imported, so the lower layer never imports
the upper one. ``import gpunda`` imports every owner except ``gpunda.operator`` (loaded by
the first Custom op through ``python_operators``, which gpunda.ndarray registers).

The engine's hot path does not read these slots: ``imperative`` keeps its own module
globals for the array classes (set by the same registration, ``register_ndarray``).
"""
from __future__ import annotations

# front ends: gpunda.ndarray
NDArray = None          # the NDArray class
new_ndarray = None      # new_ndarray(data, ctx) -> NDArray around a backend array
nd = None               # the gpunda.ndarray namespace (ops as functions on NDArrays)
wrap_storage = None     # wrap_storage(dense or sparse storage, ctx) -> NDArray of its stype
# front ends: gpunda.symbol
Symbol = None           # the Symbol class
infer_graph = None      # infer_graph(symbol, shapes, dtypes, var_shape) -> (shapes, dtypes)
var_shape = None        # a variable node's declared shape
var_dtype = None        # a variable node's declared dtype
symbol_from_json = None  # symbol_from_json(text) -> Symbol (MXNet symbol JSON; the _CachedOp op)
subgraph_api = None     # () -> gpunda._frontend.subgraph (graph partitioning; the C-API stand-in)
# engine: gpunda._engine
CachedOp = None         # the CachedOp class (a control-flow op's subgraph runs as one)
invoke_parsed = None    # imperative.invoke_parsed
python_operators = None  # () -> the gpunda.operator module (Custom ops), loaded on first use
from_dlpack_pointer = None  # DLManagedTensor address -> NDArray (the C-API stand-in)
sync_copy_from_ndarray = None  # (dst, src, j): src's values into part j of dst (the C-API stand-in)
# devices: gpunda.context
num_gpus = None
# libraries: gpunda.profiler, set only while it records (None otherwise, so the callers
# pay one global read)
profile_creation = None  # profile_creation(name, fill) -> fill timed as op ``name`` (nd.zeros & co.)
profile_scope = None    # profile_scope(label) -> context manager around a Custom op's Python


def register_ndarray(cls, new, namespace, wrap):
    """gpunda.ndarray's registration: its class, constructor, namespace and storage wrapper."""
    global NDArray, new_ndarray, nd, wrap_storage
    NDArray, new_ndarray, nd, wrap_storage = cls, new, namespace, wrap


def missing(slot, where):
    """The error for a hook whose owner was never imported."""
    from gpunda.base import GpundaError
    return GpundaError(f"{where}: gpunda's {slot} is not loaded (import gpunda first)")
