"""Basic Gluon layers (MXNet 1.x ``gluon.nn``): containers, Dense, BatchNorm, Dropout, ..."""
from __future__ import annotations

import warnings

import numpy as np

from gpunda import ndarray as _ndmod
from gpunda.base import GpundaError, np_dtype
from gpunda.gluon.block import Block, HybridBlock
from gpunda.gluon.parameter import _shape_known
from gpunda.gluon.nn.activations import Activation

__all__ = ["Sequential", "HybridSequential", "Dense", "Dropout", "Embedding", "BatchNorm",
           "BatchNormReLU", "InstanceNorm", "LayerNorm", "GroupNorm", "Flatten", "Lambda",
           "HybridLambda", "Identity"]


def _mismatch(block, param, got, what, x):
    raise GpundaError(f"{type(block).__name__} {block.name}: the input of shape {tuple(x.shape)} "
                      f"has {got} {what} but Parameter {param.name!r} has shape {param.shape}")


class _Stack:
    """What Sequential and HybridSequential share: children run one after another."""

    def add(self, *blocks):
        """Append blocks."""
        for block in blocks:
            self.register_child(block)

    def _run_children(self, x, args):
        for block in self._children.values():
            x = block(x, *args)
            args = []
            if isinstance(x, (tuple, list)):
                args = x[1:]
                x = x[0]
        if args:
            x = tuple([x] + list(args))
        return x

    def __repr__(self):
        mods = "\n".join(f"  ({k}): {_indent(repr(b))}" for k, b in self._children.items())
        return f"{type(self).__name__}(\n{mods}\n)"

    def __getitem__(self, key):
        layers = list(self._children.values())[key]
        if isinstance(layers, list):
            net = type(self)(prefix=self._prefix)
            with net.name_scope():
                net.add(*layers)
            return net
        return layers

    def __len__(self):
        return len(self._children)


def _indent(s):
    return s.replace("\n", "\n  ")


class Sequential(_Stack, Block):
    """Stack of Blocks run one after another (``net.add(layer, ...)``)."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def forward(self, x, *args):
        return self._run_children(x, args)

    def hybridize(self, active=True, **kwargs):
        if self._children and all(isinstance(c, HybridBlock) for c in self._children.values()):
            warnings.warn(f"All children of {self.name} are HybridBlocks; use HybridSequential "
                          f"to hybridize the whole stack as one graph", stacklevel=2)
        super().hybridize(active, **kwargs)


class HybridSequential(_Stack, HybridBlock):
    """Stack of HybridBlocks, hybridizable as one graph."""

    def __init__(self, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)

    def hybrid_forward(self, F, x, *args):
        return self._run_children(x, args)


class Dense(HybridBlock):
    """Fully connected layer: ``activation(dot(x, weight.T) + bias)``.

    ``flatten=True`` collapses all but the first input axis; otherwise the
    last axis is the feature axis. ``in_units=0`` defers the weight's shape to
    the first forward.
    """

    def __init__(self, units, activation=None, use_bias=True, flatten=True, dtype="float32",
                 weight_initializer=None, bias_initializer="zeros", in_units=0, **kwargs):
        super().__init__(**kwargs)
        # MXNet accepts units=0 (an empty layer); only a negative count is nonsense
        if not isinstance(units, (int, np.integer)) or units < 0:
            raise GpundaError(f"Dense: units={units!r} must be a non-negative integer")
        self._flatten = flatten
        with self.name_scope():
            self._units = int(units)
            self._in_units = in_units
            self.weight = self.params.get("weight", shape=(units, in_units),
                                          init=weight_initializer, dtype=dtype,
                                          allow_deferred_init=True)
            if use_bias:
                self.bias = self.params.get("bias", shape=(units,), init=bias_initializer,
                                            dtype=dtype, allow_deferred_init=True)
            else:
                self.bias = None
            self.act = Activation(activation, prefix=activation + "_") if activation else None

    def _infer_param_shapes(self, x, *args):
        n = int(np.prod(x.shape[1:])) if self._flatten else x.shape[-1]
        self.weight.shape = (self._units, n)

    def hybrid_forward(self, F, x, weight, bias=None):
        if F is _ndmod:
            n = (x.size // x.shape[0] if x.shape[0] else int(np.prod(x.shape[1:]))) \
                if self._flatten else x.shape[-1]
            if n != weight.shape[1]:
                _mismatch(self, self.weight, n, "input features", x)
        if bias is None:
            act = F.FullyConnected(x, weight, no_bias=True, num_hidden=self._units,
                                   flatten=self._flatten, name="fwd")
        else:
            act = F.FullyConnected(x, weight, bias, no_bias=False, num_hidden=self._units,
                                   flatten=self._flatten, name="fwd")
        if self.act is not None:
            act = self.act(act)
        return act

    def __repr__(self):
        shape = self.weight.shape
        return (f"{type(self).__name__}({shape[1] if shape[1] else None} -> {shape[0]}, "
                f"{self.act if self.act else 'linear'})")


class Dropout(HybridBlock):
    """Zero inputs with probability ``rate`` in training (scaling the rest by 1/(1-rate))."""

    def __init__(self, rate, axes=(), **kwargs):
        super().__init__(**kwargs)
        if not 0 <= rate <= 1:
            raise GpundaError(f"Dropout: rate={rate!r} must be in [0, 1]")
        self._rate = rate
        self._axes = tuple(axes)

    def hybrid_forward(self, F, x):
        if self._rate <= 0:
            return F.identity(x, name="fwd") if hasattr(F, "identity") else x
        if self._axes:
            return F.Dropout(x, p=self._rate, axes=self._axes, name="fwd")
        return F.Dropout(x, p=self._rate, name="fwd")

    def __repr__(self):
        return f"{type(self).__name__}(p = {self._rate}, axes={self._axes})"


def _norm_repr(block, none_if_unknown=False):
    """MXNet's repr of the normalisation layers: the op's keyword arguments in order,
    each as ``name=repr(value)``, then ``in_channels`` (BatchNorm shows an unknown
    count as None, InstanceNorm and LayerNorm as 0)."""
    c = block.gamma.shape[0]
    args = ", ".join(f"{k}={v!r}" for k, v in block._kwargs.items())
    return (f"{type(block).__name__}({args}, "
            f"in_channels={None if none_if_unknown and not c else c})")


def _scale_shift_params(block, scale, center, size, gamma_init, beta_init, mark_fixed=False):
    """A normalisation layer's ``gamma`` and ``beta``: learned when ``scale``/``center``,
    otherwise held fixed (grad_req 'null'), as MXNet's layers make them; ``mark_fixed`` also
    marks a fixed one not differentiable (BatchNorm's)."""
    flags = lambda on: {"differentiable": on} if mark_fixed else {}  # noqa: E731
    block.gamma = block.params.get("gamma", grad_req="write" if scale else "null",
                                   shape=(size,), init=gamma_init, allow_deferred_init=True,
                                   **flags(scale))
    block.beta = block.params.get("beta", grad_req="write" if center else "null",
                                  shape=(size,), init=beta_init, allow_deferred_init=True,
                                  **flags(center))


class _BatchNorm(HybridBlock):
    """Batch normalisation over axis ``axis`` (MXNet's BatchNorm op; with ``fuse_relu``
    its BatchNormWithReLU op).

    Training normalises with batch statistics and updates the running ones
    (``momentum``); prediction uses the running ones.
    """

    def __init__(self, axis=1, momentum=0.9, epsilon=1e-5, center=True, scale=True,
                 use_global_stats=False, fuse_relu=False, beta_initializer="zeros",
                 gamma_initializer="ones", running_mean_initializer="zeros",
                 running_variance_initializer="ones", in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self.fuse_relu = fuse_relu
        self._kwargs = {"axis": axis, "eps": epsilon, "momentum": momentum,
                        "fix_gamma": not scale, "use_global_stats": use_global_stats}
        self._axis = axis
        self.in_channels = in_channels
        _scale_shift_params(self, scale, center, in_channels, gamma_initializer,
                            beta_initializer, mark_fixed=True)
        self.running_mean = self.params.get("running_mean", grad_req="null",
                                            shape=(in_channels,),
                                            init=running_mean_initializer,
                                            allow_deferred_init=True, differentiable=False)
        self.running_var = self.params.get("running_var", grad_req="null",
                                           shape=(in_channels,),
                                           init=running_variance_initializer,
                                           allow_deferred_init=True, differentiable=False)

    def _infer_param_shapes(self, x, *args):
        c = x.shape[self._axis]
        for p in (self.gamma, self.beta, self.running_mean, self.running_var):
            p.shape = (c,)

    def cast(self, dtype):
        if np_dtype(dtype).name in ("float16", "bfloat16"):
            # statistics stay in float32, as in MXNet (its BatchNorm type rule gives 16-bit
            # float data float32 parameters; its Python cannot name bfloat16 here)
            dtype = "float32"
        super().cast(dtype)

    def hybrid_forward(self, F, x, gamma, beta, running_mean, running_var):
        if F is _ndmod and x.ndim > self._axis >= -x.ndim and x.shape[self._axis] != gamma.shape[0]:
            _mismatch(self, self.gamma, x.shape[self._axis], f"channels on axis {self._axis}", x)
        op = F.contrib.BatchNormWithReLU if self.fuse_relu else F.BatchNorm
        return op(x, gamma, beta, running_mean, running_var, name="fwd", **self._kwargs)

    def __repr__(self):
        return _norm_repr(self, none_if_unknown=True)


class BatchNorm(_BatchNorm):
    """Batch normalisation over axis ``axis`` (MXNet's BatchNorm op).

    Training normalises with batch statistics and updates the running ones
    (``momentum``); prediction uses the running ones.
    """

    def __init__(self, axis=1, momentum=0.9, epsilon=1e-5, center=True, scale=True,
                 use_global_stats=False, beta_initializer="zeros", gamma_initializer="ones",
                 running_mean_initializer="zeros", running_variance_initializer="ones",
                 in_channels=0, **kwargs):
        super().__init__(axis, momentum, epsilon, center, scale, use_global_stats, False,
                         beta_initializer, gamma_initializer, running_mean_initializer,
                         running_variance_initializer, in_channels, **kwargs)


class BatchNormReLU(_BatchNorm):
    """Batch normalisation followed by ReLU, as one op (``contrib.BatchNormWithReLU``)."""

    def __init__(self, axis=1, momentum=0.9, epsilon=1e-5, center=True, scale=True,
                 use_global_stats=False, beta_initializer="zeros", gamma_initializer="ones",
                 running_mean_initializer="zeros", running_variance_initializer="ones",
                 in_channels=0, **kwargs):
        super().__init__(axis, momentum, epsilon, center, scale, use_global_stats, True,
                         beta_initializer, gamma_initializer, running_mean_initializer,
                         running_variance_initializer, in_channels, **kwargs)


class InstanceNorm(HybridBlock):
    """Instance normalisation (per sample and channel over the spatial axes)."""

    def __init__(self, axis=1, epsilon=1e-5, center=True, scale=False, beta_initializer="zeros",
                 gamma_initializer="ones", in_channels=0, **kwargs):
        super().__init__(**kwargs)
        self._kwargs = {"eps": epsilon, "axis": axis, "center": center, "scale": scale}
        self._axis = axis
        self._epsilon = epsilon
        _scale_shift_params(self, scale, center, in_channels, gamma_initializer,
                            beta_initializer)

    def _infer_param_shapes(self, x, *args):
        c = x.shape[self._axis]
        self.gamma.shape = (c,)
        self.beta.shape = (c,)

    def __repr__(self):
        return _norm_repr(self)

    def hybrid_forward(self, F, x, gamma, beta):
        if self._axis == 1:
            return F.InstanceNorm(x, gamma, beta, name="fwd", eps=self._epsilon)
        x = x.swapaxes(1, self._axis)
        return F.InstanceNorm(x, gamma, beta, name="fwd",
                              eps=self._epsilon).swapaxes(1, self._axis)


class LayerNorm(HybridBlock):
    """Layer normalisation over axis ``axis`` with learned ``gamma``/``beta``."""

    def __init__(self, axis=-1, epsilon=1e-5, center=True, scale=True, beta_initializer="zeros",
                 gamma_initializer="ones", in_channels=0, prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._kwargs = {"eps": epsilon, "axis": axis, "center": center, "scale": scale}
        self._axis = axis
        self._epsilon = epsilon
        self._center = center
        self._scale = scale
        _scale_shift_params(self, scale, center, in_channels, gamma_initializer,
                            beta_initializer)

    def _infer_param_shapes(self, x, *args):
        c = x.shape[self._axis]
        self.gamma.shape = (c,)
        self.beta.shape = (c,)

    def hybrid_forward(self, F, data, gamma, beta):
        if F is _ndmod and data.shape[self._axis] != gamma.shape[0]:
            _mismatch(self, self.gamma, data.shape[self._axis], f"features on axis {self._axis}",
                      data)
        if hasattr(F, "LayerNorm"):
            return F.LayerNorm(data, gamma=gamma, beta=beta, axis=self._axis, eps=self._epsilon)
        if self._axis != -1:
            raise GpundaError(f"LayerNorm {self.name}: axis={self._axis} needs the LayerNorm "
                              f"operator, which this build lacks; use axis=-1")
        # composition of basic ops, for builds without a LayerNorm kernel
        mean = F.mean(data, axis=-1, keepdims=True)
        xc = F.broadcast_sub(data, mean)
        var = F.mean(F.square(xc), axis=-1, keepdims=True)
        out = F.broadcast_div(xc, F.sqrt(var + self._epsilon))
        return F.broadcast_add(F.broadcast_mul(out, gamma), beta)

    def __repr__(self):
        return _norm_repr(self)


class GroupNorm(HybridBlock):
    """Group normalisation: the channel axis 1 split into ``num_groups`` groups, each
    normalised per sample; ``gamma``/``beta`` hold one value per group (MXNet 1.9.1)."""

    def __init__(self, num_groups=1, epsilon=1e-5, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones", prefix=None, params=None):
        super().__init__(prefix=prefix, params=params)
        self._kwargs = {"eps": epsilon, "num_groups": num_groups, "center": center,
                        "scale": scale}
        self._num_groups = num_groups
        self._epsilon = epsilon
        _scale_shift_params(self, scale, center, num_groups, gamma_initializer,
                            beta_initializer)

    def hybrid_forward(self, F, data, gamma, beta):
        return F.GroupNorm(data, gamma=gamma, beta=beta, num_groups=self._num_groups,
                           eps=self._epsilon)

    def __repr__(self):
        content = ", ".join(f"{k}={v!r}" for k, v in self._kwargs.items())
        return f"{type(self).__name__}({content})"


class Embedding(HybridBlock):
    """Lookup table: integer indices (in any float/int dtype) -> rows of ``weight``."""

    def __init__(self, input_dim, output_dim, dtype="float32", weight_initializer=None,
                 sparse_grad=False, **kwargs):
        super().__init__(**kwargs)
        grad_stype = "row_sparse" if sparse_grad else "default"
        self._kwargs = {"input_dim": input_dim, "output_dim": output_dim, "dtype": dtype,
                        "sparse_grad": sparse_grad}
        self.weight = self.params.get("weight", shape=(input_dim, output_dim),
                                      init=weight_initializer, dtype=dtype,
                                      allow_deferred_init=True, grad_stype=grad_stype)

    def hybrid_forward(self, F, x, weight):
        return F.Embedding(x, weight, name="fwd", **self._kwargs)

    def __repr__(self):
        return f"{type(self).__name__}({self._kwargs['input_dim']} -> {self._kwargs['output_dim']}, {self._kwargs['dtype']})"


class Flatten(HybridBlock):
    """Collapse all axes but the first: (N, ...) -> (N, prod(...))."""

    def hybrid_forward(self, F, x):
        return F.Flatten(x)

    def __repr__(self):
        return type(self).__name__


class Identity(HybridBlock):
    """Returns its input."""

    def hybrid_forward(self, F, x):
        return x


class Lambda(Block):
    """Wrap a function (or the name of an ``nd`` function) as a Block."""

    def __init__(self, function, prefix=None):
        super().__init__(prefix=prefix)
        if isinstance(function, str):
            if not hasattr(_ndmod, function):
                raise GpundaError(f"Lambda: function {function!r} is not in gpunda.ndarray")
            self._func_impl = getattr(_ndmod, function)
        elif callable(function):
            self._func_impl = function
        else:
            raise GpundaError(f"Lambda: function={function!r} must be a callable or a name")

    def forward(self, *args):
        return self._func_impl(*args)

    def __repr__(self):
        return f"{type(self).__name__}({getattr(self._func_impl, '__name__', self._func_impl)})"


class HybridLambda(HybridBlock):
    """Wrap ``function(F, *args)`` (or the name of an op) as a HybridBlock."""

    def __init__(self, function, prefix=None):
        super().__init__(prefix=prefix)
        if isinstance(function, str):
            if not hasattr(_ndmod, function):
                raise GpundaError(f"HybridLambda: function {function!r} is not an operator")
            self._func = lambda F, *args: getattr(F, function)(*args)
            self._func_name = function
        elif callable(function):
            self._func = function
            self._func_name = getattr(function, "__name__", "<lambda>")
        else:
            raise GpundaError(f"HybridLambda: function={function!r} must be a callable or a "
                              f"name")

    def hybrid_forward(self, F, x, *args):
        return self._func(F, x, *args)

    def __repr__(self):
        return f"{type(self).__name__}({self._func_name})"
