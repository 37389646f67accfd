"""Generate ``nd.<op>`` functions and NDArray methods from the registry.

Functions are closures with ``functools.wraps``-style metadata (no exec of
generated source), so tracebacks and grep find them. Calling conventions as
MXNet's generated functions: NDArray inputs positionally or by input name,
further positional values fill params in declaration order, ``out=`` and
``name=`` keywords.
"""
from __future__ import annotations

from gpunda._engine import imperative as _imp
from gpunda.base import GpundaError, GpundaTypeError
from gpunda._core.not_built import stub_function as _stub_function
from gpunda.ops.registry import all_names, fill_positional_params

_invoke = _imp.invoke_parsed


def make_function(op, fname, NDArray=None):  # noqa: N803  (the class, as in the body)
    """The ``nd.<fname>`` function for OpDef ``op`` (``NDArray``: the array class, passed by
    ``populate`` so a thousand calls do not each import it)."""
    if NDArray is None:
        from gpunda.ndarray.ndarray import NDArray
    fixed_inputs = None if op.variadic else op.inputs
    var_key = op.key_var_num_args

    dp = op.default_params
    fast = dp is not None and fixed_inputs is not None and len(fixed_inputs) == 1 \
        and op.fixed_nout == 1 and not op.wants_ctx

    def fn(*args, out=None, name=None, **kwargs):
        inputs = []
        extra = []
        skipped = 0
        for a in args:
            if isinstance(a, NDArray) and not extra:
                inputs.append(a)
            elif a is None and inputs and not extra and \
                    len(inputs) + skipped < _input_slots(op):
                skipped += 1    # an absent optional input: FullyConnected(x, w, None, ...)
            elif isinstance(a, (list, tuple)) and a and all(isinstance(v, NDArray) for v in a) \
                    and op.variadic and not extra and not inputs:
                inputs.extend(a)
            else:
                if fixed_inputs is not None and not extra and len(inputs) < len(fixed_inputs) \
                        and not isinstance(a, (int, float, str, tuple)) and a is not None:
                    raise GpundaError(f"Operator {op.name}: input {fixed_inputs[len(inputs)]} "
                                      f"must be an NDArray, got {type(a).__name__}")
                extra.append(a)
        if extra:
            fill_positional_params(op, extra, kwargs, len(args))
        if fixed_inputs is not None:
            if kwargs and len(inputs) < len(fixed_inputs):
                for nm in fixed_inputs[len(inputs):]:
                    if nm in kwargs:
                        v = kwargs.pop(nm)
                        if v is not None:
                            inputs.append(v)
            p = op.parse_params(kwargs) if kwargs else op.default_params
            if p is None:
                p = op.parse_params(kwargs)
            if len(inputs) != len(fixed_inputs):
                _missing(op, fixed_inputs, inputs)
        else:
            if var_key is not None and var_key not in kwargs:
                kwargs[var_key] = len(inputs)
            names = None
            # inputs given by name (e.g. FullyConnected(data=..., weight=...))
            if any(isinstance(v, NDArray) for v in kwargs.values()):
                nd_kw = {k: kwargs.pop(k) for k in list(kwargs) if isinstance(kwargs[k], NDArray)}
                p = op.parse_params(kwargs)
                names = op.input_names(p)
                for nm in names[len(inputs):]:
                    if nm in nd_kw:
                        inputs.append(nd_kw.pop(nm))
                if nd_kw:
                    raise GpundaError(f"Operator {op.name}: unexpected inputs {sorted(nd_kw)}; "
                                      f"inputs are {list(names)}")
            else:
                # None leaves out an input (bias=None); a Custom op's own keywords pass it
                # on as the string 'None', as MXNet's generated functions do
                for k in [k for k, v in kwargs.items()
                          if v is None and k not in op.param_map and not op.extra_params]:
                    kwargs.pop(k)
                p = op.parse_params(kwargs)
            if names is None and not op.key_var_num_args:
                names = op.input_names(p)
            if names is not None and len(inputs) != len(names):
                _missing(op, names, inputs)
        return _invoke(op, tuple(inputs), p, out)

    if fast:    # nd.tanh(x): a function with the dense NumPy case inlined, then fn
        fn = _imp.unary_fn(op, fn)
    fn.__name__ = fname
    fn.__qualname__ = fname
    fn.__doc__ = op.describe()
    fn.__module__ = "gpunda.ndarray"
    fn.op = op
    return fn


_SLOTS = {}


def _input_slots(op):
    """How many inputs MXNet's generated function for ``op`` takes positionally: all the
    inputs the op can have (MXNet's signature lists them all, ``bias`` of FullyConnected
    with ``no_bias=True`` included); a positional None there is an absent input. Ops with
    a variable number of inputs (Concat) take none as absent."""
    n = _SLOTS.get(op.name)
    if n is None:
        n = _SLOTS[op.name] = _count_slots(op)
    return n


def _count_slots(op):
    if not op.variadic:
        return len(op.inputs)
    if op.key_var_num_args:
        return 0
    from gpunda.ops.registry import REQUIRED, Params
    values = {s.name: (None if s.default is REQUIRED else s.default) for s in op.params}

    def count(vals):
        try:
            return len(op.inputs(Params(vals, {})))
        except Exception:   # a configuration the input rule cannot read
            return -1
    # the inputs a param switches on (no_bias=False, mode='lstm', use_sequence_length=True)
    best = count(values)
    for spec in op.params:
        options = spec.choices if spec.choices else (
            (False, True) if spec.kind == "bool" else ())
        for v in options:
            trial = dict(values, **{spec.name: v})
            n = count(trial)
            if n > best:
                best, values = n, trial
    return max(best, 0)


def _missing(op, names, inputs):
    raise GpundaError(f"Operator {op.name}: expects {len(names)} inputs ({', '.join(names)}) "
                      f"but got {len(inputs)}")


def populate(namespace_module, ndarray_cls):
    """Fill a module with one function per registered name and add NDArray methods."""
    for name, op in all_names().items():
        fn = make_function(op, name, ndarray_cls)
        setattr(namespace_module, name, fn)
        if name.startswith("_") or op.hidden:
            continue
        meth = op.method if op.method else (name if name.islower() else None)
        if meth and not hasattr(ndarray_cls, meth) and not op.variadic and op.inputs \
                and not op.wants_ctx:
            setattr(ndarray_cls, meth, _as_method(fn))


def _as_method(fn):
    def method(self, *args, **kwargs):
        return fn(self, *args, **kwargs)
    method.__name__ = fn.__name__
    method.__doc__ = fn.__doc__
    return method


# -- MXNet's module-level helpers of mxnet.ndarray.register ------------------------------

def _check_flavour(op_name, func_name, args, out, want_np):
    from gpunda.numpy.multiarray import ndarray as np_ndarray
    outs = [] if out is None else (list(out) if isinstance(out, (list, tuple)) else [out])
    for where, arrays in (("input", args), ("output", outs)):
        for arr in arrays:
            if arr is None or isinstance(arr, np_ndarray) == want_np:
                continue
            if want_np:
                raise GpundaTypeError(
                    f"Operator `{op_name}` registered in backend is known as `{func_name}` in "
                    f"Python. It is a NumPy operator and takes only mx.np.ndarray {where}s, "
                    f"but got a legacy NDArray; turn NumPy semantics on (npx.set_np()) or "
                    f"convert the array with as_np_ndarray().")
            raise GpundaTypeError(
                f"Operator `{op_name}` registered in backend is known as `{func_name}` in "
                f"Python. It is a legacy operator and takes only legacy NDArray {where}s, but "
                f"got an mx.np.ndarray; convert it with as_nd_ndarray().")


def _verify_all_np_ndarrays(op_name, func_name, args, out):
    """TypeError unless every non-None array of ``args`` and ``out`` (an array or a list
    of them) is an ``mx.np.ndarray``."""
    _check_flavour(op_name, func_name, args, out, True)


def _verify_all_legacy_ndarrays(op_name, func_name, args, out):
    """TypeError if any array of ``args`` or ``out`` is an ``mx.np.ndarray``."""
    _check_flavour(op_name, func_name, args, out, False)


def _make_ndarray_function(handle, name, func_name):
    """The ``nd`` function named ``func_name`` that runs registered op ``name``. MXNet
    finds the op by its C-API ``handle``; gpunda finds it by name in its registry, and the
    handle is not read."""
    from gpunda.ops.registry import get_op
    return make_function(get_op(name), func_name)


_generate_ndarray_function_code = _stub_function(
    "mxnet.ndarray.register", "_generate_ndarray_function_code",
    "it writes the Python source of an op function around the op's C-API handle; gpunda "
    "makes op functions as closures over the op registry (use _make_ndarray_function)")
