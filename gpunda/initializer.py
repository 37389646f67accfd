"""Weight initializers (MXNet 1.x's ``mx.init``): Uniform, Normal, Xavier, MSRAPrelu, ...

An initializer is called as ``init(desc, arr)`` where ``desc`` is an
``InitDesc`` (the parameter's name plus attributes) and ``arr`` an NDArray that
is filled in place. Gluon puts the parameter's own initializer in
``desc.attrs['__init__']``; when present it wins and its ``_init_weight`` fills
the array whatever the name. Otherwise the name's suffix decides (``*_weight``
gets ``_init_weight``, ``*_bias`` zeros, ``*_gamma`` ones, ...), as MXNet does
for symbolic models.
"""
from __future__ import annotations

import math as _math

import numpy as np

from gpunda.base import GpundaError as _GpundaError

__all__ = ["InitDesc", "Initializer", "register", "alias", "create", "Zero", "One", "Constant",
           "Uniform", "Normal", "Xavier", "MSRAPrelu", "Orthogonal", "Mixed", "Load",
           "LSTMBias", "Bilinear"]

_REGISTRY = {}


class InitDesc(str):
    """A parameter name (a ``str``) carrying ``attrs`` and the ``global_init``."""

    def __new__(cls, name, attrs=None, global_init=None):
        ret = super().__new__(cls, name)
        ret.attrs = attrs or {}
        ret.global_init = global_init
        return ret


def register(klass):
    """Class decorator: make an Initializer creatable by its lower-case class name."""
    if not (isinstance(klass, type) and issubclass(klass, Initializer)):
        raise _GpundaError(f"initializer.register: {klass!r} is not an Initializer subclass")
    _REGISTRY[klass.__name__.lower()] = klass
    return klass


def alias(*aliases):
    """Class decorator: also register the class under ``aliases``."""
    def reg(klass):
        for a in aliases:
            _REGISTRY[a.lower()] = klass
        return klass
    return reg


def create(init, **kwargs):
    """An Initializer from an instance, a registered name ('xavier', 'zeros'),
    a JSON dump (``'["xavier", {"magnitude": 2}]'``) or a class."""
    if isinstance(init, Initializer):
        return init
    if isinstance(init, type) and issubclass(init, Initializer):
        return init(**kwargs)
    if isinstance(init, str):
        s = init.strip()
        if s.startswith("["):
            try:
                import json
                name, kw = json.loads(s)
            except (ValueError, TypeError):
                raise _GpundaError(f"initializer.create: cannot parse {init!r}; expected "
                                  f"'[\"name\", {{kwargs}}]'") from None
            klass = _REGISTRY.get(str(name).lower())
            if klass is None:
                return create(name)         # raises: unknown initializer
            # not create(name, **kw): kwargs may hold 'init' (FusedRNN's inner initializer)
            return klass(**dict(kw, **kwargs))
        klass = _REGISTRY.get(s.lower())
        if klass is None:
            raise _GpundaError(f"initializer.create: unknown initializer {init!r}; known: "
                              f"{', '.join(sorted(_REGISTRY))}")
        return klass(**kwargs)
    raise _GpundaError(f"initializer.create: init={init!r} must be an Initializer, a name or "
                      f"a JSON string")


def _fill(arr, host):
    """Write NumPy values ``host`` into NDArray ``arr`` (any context)."""
    arr[:] = np.asarray(host, dtype=arr.dtype).reshape(arr.shape)


def _rng():
    # the CPU generator that mx.random.seed() controls, so seeding makes
    # initialisation reproducible as in MXNet
    from gpunda import random as _r
    from gpunda.context import cpu
    return _r._generator(cpu())


class Initializer:
    """Base class. Subclasses override ``_init_weight`` (and others as needed)."""

    def __init__(self, **kwargs):
        self._kwargs = kwargs
        self._verbose = False
        self._print_func = None

    def set_verbosity(self, verbose=False, print_func=None):
        """Log the norm of every initialised array when ``verbose``."""
        self._verbose = verbose
        self._print_func = print_func or (lambda x: f"{float(np.linalg.norm(x.asnumpy())) / _math.sqrt(max(x.size, 1)):.5g}")
        return self

    def _verbose_print(self, desc, init, arr):
        if self._verbose and self._print_func:
            import logging
            logging.info("Initialized %s as %s: %s", desc, init, self._print_func(arr))

    def __eq__(self, other):
        # as MXNet: the same class with the same arguments (ParameterDict.get compares inits)
        if not isinstance(other, Initializer):
            return NotImplemented
        return type(self) is type(other) and self._kwargs == other._kwargs

    # kept hashable by identity so initializers can still key dicts and sets
    __hash__ = object.__hash__

    def dumps(self):
        """``'["name", {kwargs}]'``, the form ``create`` and symbol attrs take."""
        import json
        return json.dumps([self.__class__.__name__.lower(), self._kwargs])

    def __repr__(self):
        return self.dumps()

    def __call__(self, desc, arr):
        """Fill NDArray ``arr`` for the parameter described by ``desc``."""
        if not isinstance(desc, InitDesc):
            desc = InitDesc(str(desc))
        if desc.global_init is None:
            desc.global_init = self
        init = desc.attrs.get("__init__", "")
        if init:
            create(init)._init_weight(desc, arr)
            self._verbose_print(desc, init, arr)
            return
        name = str(desc)
        if name.endswith("upsampling"):
            self._init_bilinear(desc, arr)
        elif name.endswith("stn_loc") and hasattr(self, "_init_loc_bias"):
            self._init_loc_bias(desc, arr)
        elif name.endswith("bias"):
            self._init_bias(desc, arr)
        elif name.endswith("gamma"):
            self._init_gamma(desc, arr)
        elif name.endswith("beta"):
            self._init_beta(desc, arr)
        elif name.endswith("weight"):
            self._init_weight(desc, arr)
        elif name.endswith(("moving_mean", "running_mean", "moving_inv_var", "moving_avg",
                            "min", "max")):
            self._init_zero(desc, arr)
        elif name.endswith(("moving_var", "running_var")):
            self._init_one(desc, arr)
        else:
            self._init_default(desc, arr)
        self._verbose_print(desc, "default", arr)

    def _init_bilinear(self, _, arr):
        Bilinear()._init_weight(_, arr)

    def _init_zero(self, _, arr):
        arr[:] = 0.0

    def _init_one(self, _, arr):
        arr[:] = 1.0

    def _init_bias(self, _, arr):
        arr[:] = 0.0

    def _init_gamma(self, _, arr):
        arr[:] = 1.0

    def _init_beta(self, _, arr):
        arr[:] = 0.0

    def _init_weight(self, name, arr):
        raise _GpundaError(f"{type(self).__name__}: this initializer cannot initialise "
                          f"weight {name!r}")

    def _init_default(self, name, _):
        raise _GpundaError(
            f"{type(self).__name__}: unknown parameter name pattern {name!r}; names ending in "
            f"weight, bias, gamma, beta, moving_mean or moving_var get a default, others need "
            f"an explicit init (e.g. attrs {{'__init__': 'zeros'}})")


@register
@alias("zeros")
class Zero(Initializer):
    """Fill with 0."""

    def _init_weight(self, _, arr):
        arr[:] = 0.0


@register
@alias("ones")
class One(Initializer):
    """Fill with 1."""

    def _init_weight(self, _, arr):
        arr[:] = 1.0


@register
class Constant(Initializer):
    """Fill with ``value`` (a scalar, or an array broadcastable to the parameter)."""

    def __init__(self, value):
        v = value.asnumpy().tolist() if hasattr(value, "asnumpy") else (
            value.tolist() if isinstance(value, np.ndarray) else value)
        super().__init__(value=v)
        self.value = value

    def _init_weight(self, name, arr):
        v = self.value
        if hasattr(v, "asnumpy"):
            v = v.asnumpy()
        try:
            arr[:] = v if np.isscalar(v) else np.broadcast_to(np.asarray(v, arr.dtype), arr.shape)
        except (ValueError, _GpundaError) as e:
            raise _GpundaError(f"Constant: value of shape {np.shape(v)} does not fit parameter "
                              f"{name!r} of shape {arr.shape}: {e}") from None


@register
class Uniform(Initializer):
    """Samples from U(-scale, scale)."""

    def __init__(self, scale=0.07):
        super().__init__(scale=scale)
        self.scale = float(scale)

    def _init_weight(self, _, arr):
        _fill(arr, _rng().uniform(-self.scale, self.scale, size=arr.shape))


@register
class Normal(Initializer):
    """Samples from N(0, sigma**2)."""

    def __init__(self, sigma=0.01):
        super().__init__(sigma=sigma)
        self.sigma = float(sigma)

    def _init_weight(self, _, arr):
        _fill(arr, _rng().normal(0.0, self.sigma, size=arr.shape))


@register
class Xavier(Initializer):
    """Xavier/Glorot: scale = sqrt(magnitude / factor), factor from fan-in/out.

    rnd_type 'uniform' draws U(-scale, scale), 'gaussian' N(0, scale**2);
    factor_type 'avg' ((in+out)/2), 'in' or 'out'. Fans count the kernel
    area for arrays with more than 2 dimensions.
    """

    def __init__(self, rnd_type="uniform", factor_type="avg", magnitude=3):
        super().__init__(rnd_type=rnd_type, factor_type=factor_type, magnitude=magnitude)
        if rnd_type not in ("uniform", "gaussian"):
            raise _GpundaError(f"Xavier: rnd_type={rnd_type!r} is not one of "
                              f"['uniform', 'gaussian']")
        if factor_type not in ("avg", "in", "out"):
            raise _GpundaError(f"Xavier: factor_type={factor_type!r} is not one of "
                              f"['avg', 'in', 'out']")
        self.rnd_type = rnd_type
        self.factor_type = factor_type
        self.magnitude = float(magnitude)

    def _init_weight(self, name, arr):
        shape = arr.shape
        if len(shape) < 2:
            raise _GpundaError(f"Xavier: cannot initialise {name!r} of shape {shape}; it needs "
                              f"at least 2 dimensions")
        hw = float(np.prod(shape[2:])) if len(shape) > 2 else 1.0
        fan_in, fan_out = shape[1] * hw, shape[0] * hw
        factor = {"avg": (fan_in + fan_out) / 2.0, "in": fan_in, "out": fan_out}[self.factor_type]
        scale = _math.sqrt(self.magnitude / factor)
        if self.rnd_type == "uniform":
            _fill(arr, _rng().uniform(-scale, scale, size=shape))
        else:
            _fill(arr, _rng().normal(0.0, scale, size=shape))


@register
class MSRAPrelu(Xavier):
    """He/Kaiming initialisation for PReLU with ``slope``: Gaussian Xavier with
    magnitude 2 / (1 + slope**2)."""

    def __init__(self, factor_type="avg", slope=0.25):
        super().__init__("gaussian", factor_type, 2.0 / (1 + slope ** 2))
        self._kwargs = {"factor_type": factor_type, "slope": slope}


@register
class Orthogonal(Initializer):
    """A (scaled) orthogonal matrix from the SVD of a random one."""

    def __init__(self, scale=1.414, rand_type="uniform"):
        super().__init__(scale=scale, rand_type=rand_type)
        self.scale, self.rand_type = scale, rand_type

    def _init_weight(self, _, arr):
        nout = arr.shape[0]
        nin = int(np.prod(arr.shape[1:]))
        if self.rand_type == "uniform":
            tmp = _rng().uniform(-1.0, 1.0, (nout, nin))
        else:
            tmp = _rng().normal(0.0, 1.0, (nout, nin))
        u, _s, v = np.linalg.svd(tmp, full_matrices=False)
        q = u if u.shape == tmp.shape else v
        _fill(arr, self.scale * q)


@register
class Bilinear(Initializer):
    """Bilinear upsampling kernels (for Deconvolution weights)."""

    def _init_weight(self, _, arr):
        shape = arr.shape
        weight = np.zeros(int(np.prod(shape)), dtype="float32")
        f = np.ceil(shape[3] / 2.0)
        c = (2 * f - 1 - f % 2) / (2.0 * f)
        for i in range(weight.size):
            x = i % shape[3]
            y = (i // shape[3]) % shape[2]
            weight[i] = (1 - abs(x / f - c)) * (1 - abs(y / f - c))
        _fill(arr, weight)


@register
class LSTMBias(Initializer):
    """Zero bias except the forget gate (second quarter), set to ``forget_bias``."""

    def __init__(self, forget_bias=1.0):
        super().__init__(forget_bias=forget_bias)
        self.forget_bias = forget_bias

    def _init_weight(self, _, arr):
        v = np.zeros(arr.shape, dtype="float32")
        n = arr.shape[0] // 4
        v[n:2 * n] = self.forget_bias
        _fill(arr, v)


class Mixed:
    """Pick an initializer by the first regex in ``patterns`` matching the name."""

    def __init__(self, patterns, initializers):
        import re
        if len(patterns) != len(initializers):
            raise _GpundaError(f"Mixed: {len(patterns)} patterns but {len(initializers)} "
                              f"initializers")
        self.map = list(zip([re.compile(p) for p in patterns], [create(i) for i in initializers]))

    def __call__(self, name, arr):
        for prog, init in self.map:
            if prog.match(str(name)):
                init(name, arr)
                return
        raise _GpundaError(f"Mixed: parameter {str(name)!r} matches no pattern; add '.*' as a "
                          f"last pattern for a default")


class Load:
    """Initialise from a dict of arrays (or a file saved with nd.save), else ``default_init``."""

    def __init__(self, param, default_init=None, verbose=False):
        if isinstance(param, str):
            from gpunda import ndarray as nd
            param = nd.load(param)
        self.param = {}
        for name, arr in param.items():
            if name.startswith(("arg:", "aux:")):
                name = name[4:]
            self.param[name] = arr
        self.default_init = default_init
        self.verbose = verbose

    def __call__(self, name, arr):
        key = str(name)
        if key in self.param:
            src = self.param[key]
            if tuple(src.shape) != tuple(arr.shape):
                raise _GpundaError(f"Load: parameter {key!r} has shape {arr.shape} but the "
                                  f"loaded array has shape {tuple(src.shape)}")
            arr[:] = src.asnumpy() if hasattr(src, "asnumpy") else np.asarray(src)
            return
        if self.default_init is None:
            raise _GpundaError(f"Load: parameter {key!r} is not in the loaded arrays and no "
                              f"default_init was given")
        self.default_init(name, arr)


@register
class FusedRNN(Initializer):
    """Initialise a FusedRNNCell's flat ``parameters`` gate by gate: each unpacked weight
    and bias gets ``init`` (or the global initializer); LSTM forget biases get
    ``forget_bias``."""

    def __init__(self, init, num_hidden, num_layers, mode, bidirectional=False,
                 forget_bias=1.0):
        init = create(init) if isinstance(init, str) else init
        super().__init__(init=init.dumps() if init is not None else None,
                         num_hidden=num_hidden, num_layers=num_layers, mode=mode,
                         bidirectional=bidirectional, forget_bias=forget_bias)
        self._init = init
        self._num_hidden, self._num_layers, self._mode = num_hidden, num_layers, mode
        self._bidirectional, self._forget_bias = bidirectional, forget_bias

    def _init_weight(self, desc, arr):
        from gpunda.rnn import FusedRNNCell
        cell = FusedRNNCell(self._num_hidden, self._num_layers, self._mode,
                            self._bidirectional, forget_bias=self._forget_bias, prefix="")
        inner = self._init or getattr(desc, "global_init", None)
        if inner is None or inner is self:
            raise _GpundaError(f"FusedRNN: no initializer for the gates of {str(desc)!r}; "
                              f"pass init= or call it through a global initializer")
        args = cell.unpack_weights({"parameters": arr})
        for name, part in args.items():
            if self._mode == "lstm" and name.endswith("_f_bias"):
                part[:] = self._forget_bias
            else:
                inner(InitDesc(name, global_init=inner), part)
        arr[:] = cell.pack_weights(args)["parameters"]

# the __future__ import binds `annotations`; MXNet's namespace has no such name (dir())
del annotations
