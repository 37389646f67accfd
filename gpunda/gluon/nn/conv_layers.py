"""Convolution and pooling layers (MXNet 1.x ``gluon.nn``)."""
from __future__ import annotations

import numpy as np

from gpunda import ndarray as _ndmod
from gpunda.base import GpundaError
from gpunda.gluon.block import HybridBlock
from gpunda.gluon.nn.basic_layers import _mismatch
from gpunda.gluon.nn.activations import Activation

__all__ = ["Conv1D", "Conv2D", "Conv3D", "Conv1DTranspose", "Conv2DTranspose",
           "Conv3DTranspose", "MaxPool1D", "MaxPool2D", "MaxPool3D", "AvgPool1D", "AvgPool2D",
           "AvgPool3D", "GlobalMaxPool1D", "GlobalMaxPool2D", "GlobalMaxPool3D",
           "GlobalAvgPool1D", "GlobalAvgPool2D", "GlobalAvgPool3D", "ReflectionPad2D"]


def _tuple(v, n, what, where):
    if isinstance(v, (int, np.integer)):
        return (int(v),) * n
    v = tuple(int(i) for i in v)
    if len(v) != n:
        raise GpundaError(f"{where}: {what}={v} must have {n} values")
    return v


def _infer_weight_shape(op_name, data_shape, kwargs):
    """The argument shapes (data, weight, bias) that op ``op_name`` (Convolution,
    Deconvolution) with ``kwargs`` infers from ``data_shape`` (0s where unknown)."""
    from gpunda import symbol
    from gpunda.util import is_np_array
    data = symbol.var("data", shape=data_shape)
    if is_np_array():
        op = getattr(symbol.npx, op_name)
        data = data.as_np_ndarray()
    else:
        op = getattr(symbol, op_name)
    return op(data, **kwargs).infer_shape_partial()[0]


class _Conv(HybridBlock):
    """Shared body of Conv*D and Conv*DTranspose (ops Convolution / Deconvolution)."""

    def __init__(self, channels, kernel_size, strides, padding, dilation, groups, layout,
                 in_channels=0, activation=None, use_bias=True, weight_initializer=None,
                 bias_initializer="zeros", op_name="Convolution", adj=None, prefix=None,
                 params=None):
        super().__init__(prefix=prefix, params=params)
        if not isinstance(channels, (int, np.integer)) or channels <= 0:
            raise GpundaError(f"{type(self).__name__}: channels={channels!r} must be a positive "
                              f"integer")
        with self.name_scope():
            self._channels = int(channels)
            self._in_channels = in_channels
            self._op_name = op_name
            self._layout = layout
            self._groups = groups
            self._kernel = tuple(kernel_size)
            self._kwargs = {"kernel": tuple(kernel_size), "stride": tuple(strides),
                            "dilate": tuple(dilation), "pad": tuple(padding),
                            "num_filter": int(channels), "num_group": int(groups),
                            "no_bias": not use_bias, "layout": layout}
            if adj is not None:
                self._kwargs["adj"] = tuple(adj)
            self.weight = self.params.get("weight", shape=self._weight_shape(in_channels),
                                          init=weight_initializer, allow_deferred_init=True)
            if use_bias:
                self.bias = self.params.get("bias", shape=(channels,), init=bias_initializer,
                                            allow_deferred_init=True)
            else:
                self.bias = None
            self.act = Activation(activation, prefix=activation + "_") if activation else None

    def _channel_axis(self):
        return 1 if self._layout.startswith("NC") else -1

    def _weight_shape(self, in_channels):
        g = self._groups
        if self._op_name == "Convolution":
            cin = in_channels // g if in_channels else 0
            if self._layout.startswith("NC"):
                return (self._channels, cin) + self._kernel
            return (self._channels,) + self._kernel + (cin,)
        return (in_channels, self._channels // g) + self._kernel

    def _infer_param_shapes(self, x, *args):
        self.weight.shape = self._weight_shape(x.shape[self._channel_axis()])

    def hybrid_forward(self, F, x, weight, bias=None):
        if F is _ndmod and x.ndim == len(self._kernel) + 2:
            cin = x.shape[self._channel_axis()]
            want = self._weight_shape(cin)
            if tuple(weight.shape) != want:
                _mismatch(self, self.weight, cin, "input channels", x)
        op = getattr(F, self._op_name)
        if bias is None:
            act = op(x, weight, name="fwd", **self._kwargs)
        else:
            act = op(x, weight, bias, name="fwd", **self._kwargs)
        if self.act is not None:
            act = self.act(act)
        return act

    def _alias(self):
        return "conv"

    def __repr__(self):
        return conv_repr(self, self._kwargs, self.weight, self.bias)


def conv_repr(layer, k, weight, bias):
    """A convolution layer's repr from its op kwargs ``k``, weight and bias (None when it
    has none); the deformable layers of gluon.contrib.cnn print the same way.

    MXNet's format, field for field. Its mapping reads the weight's shape[1] -> shape[0]
    whatever the op and layout (a Transpose layer shows channels/groups -> in_channels, a
    grouped one in_channels/groups), and output_padding is never shown; printed models
    match MXNet's, quirks included."""
    n = len(k["kernel"])
    shape = weight.shape
    s = (f"{type(layer).__name__}({shape[1] if shape[1] else None} -> {shape[0]}, "
         f"kernel_size={k['kernel']}, stride={k['stride']}")
    if k["pad"] != (0,) * n:
        s += f", padding={k['pad']}"
    if k["dilate"] != (1,) * n:
        s += f", dilation={k['dilate']}"
    if k["num_group"] != 1:
        s += f", groups={k['num_group']}"
    if bias is None:
        s += ", bias=False"
    if layer.act is not None:
        s += f", {layer.act!r}"
    return s + ")"


def _make_conv(nd_, name, layout_default, transpose=False):
    def __init__(self, channels, kernel_size, strides=1, padding=0, *rest, **kwargs):
        where = name
        output_padding = 0
        if transpose:
            names = ("output_padding", "dilation", "groups", "layout", "activation", "use_bias",
                     "weight_initializer", "bias_initializer", "in_channels")
        else:
            names = ("dilation", "groups", "layout", "activation", "use_bias",
                     "weight_initializer", "bias_initializer", "in_channels")
        if len(rest) > len(names):
            raise GpundaError(f"{where}: too many positional arguments")
        opts = dict(zip(names, rest))
        for k in list(kwargs):
            if k in names:
                if k in opts:
                    raise GpundaError(f"{where}: {k} given twice")
                opts[k] = kwargs.pop(k)
        dilation = opts.get("dilation", 1)
        groups = opts.get("groups", 1)
        layout = opts.get("layout", layout_default)
        if len(layout) != nd_ + 2:
            raise GpundaError(f"{where}: layout={layout!r} must have {nd_ + 2} letters "
                              f"(e.g. {layout_default!r})")
        ks = _tuple(kernel_size, nd_, "kernel_size", where)
        args = dict(channels=channels, kernel_size=ks, strides=_tuple(strides, nd_, "strides", where),
                    padding=_tuple(padding, nd_, "padding", where),
                    dilation=_tuple(dilation, nd_, "dilation", where), groups=groups,
                    layout=layout, in_channels=opts.get("in_channels", 0),
                    activation=opts.get("activation"), use_bias=opts.get("use_bias", True),
                    weight_initializer=opts.get("weight_initializer"),
                    bias_initializer=opts.get("bias_initializer", "zeros"))
        if transpose:
            output_padding = opts.get("output_padding", 0)
            args["op_name"] = "Deconvolution"
            args["adj"] = _tuple(output_padding, nd_, "output_padding", where)
        _Conv.__init__(self, **args, **kwargs)

    doc = (f"{nd_}-D {'transposed ' if transpose else ''}convolution (op "
           f"{'Deconvolution' if transpose else 'Convolution'}), layout {layout_default!r} by "
           f"default; ``in_channels=0`` defers the weight's shape to the first forward.")
    return type(name, (_Conv,), {"__init__": __init__, "__doc__": doc})


Conv1D = _make_conv(1, "Conv1D", "NCW")
Conv2D = _make_conv(2, "Conv2D", "NCHW")
Conv3D = _make_conv(3, "Conv3D", "NCDHW")
Conv1DTranspose = _make_conv(1, "Conv1DTranspose", "NCW", transpose=True)
Conv2DTranspose = _make_conv(2, "Conv2DTranspose", "NCHW", transpose=True)
Conv3DTranspose = _make_conv(3, "Conv3DTranspose", "NCDHW", transpose=True)
for _c in (Conv1D, Conv2D, Conv3D, Conv1DTranspose, Conv2DTranspose, Conv3DTranspose):
    _c.__module__ = __name__


class _Pooling(HybridBlock):
    """Shared body of the pooling layers (op Pooling)."""

    def __init__(self, pool_size, strides, padding, ceil_mode, global_pool, pool_type, layout,
                 count_include_pad=None, **kwargs):
        super().__init__(**kwargs)
        if strides is None:
            strides = pool_size
        self._kwargs = {"kernel": pool_size, "stride": strides, "pad": padding,
                        "global_pool": global_pool, "pool_type": pool_type, "layout": layout,
                        "pooling_convention": "full" if ceil_mode else "valid"}
        if count_include_pad is not None:
            self._kwargs["count_include_pad"] = count_include_pad

    def _alias(self):
        return "pool"

    def hybrid_forward(self, F, x):
        return F.Pooling(x, name="fwd", **self._kwargs)

    def __repr__(self):
        k = self._kwargs
        return (f"{type(self).__name__}(size={k['kernel']}, stride={k['stride']}, "
                f"padding={k['pad']}, ceil_mode={k['pooling_convention'] == 'full'}, "
                f"global_pool={k['global_pool']}, pool_type={k['pool_type']}, "
                f"layout={k['layout']})")


def _pool_init(self, name, nd_, pool_type, pool_size, strides, padding, ceil_mode, layout,
               count_include_pad, kwargs):
    if len(layout) != nd_ + 2:
        raise GpundaError(f"{name}: layout={layout!r} must have {nd_ + 2} letters")
    ps = _tuple(pool_size, nd_, "pool_size", name)
    st = _tuple(strides, nd_, "strides", name) if strides is not None else None
    _Pooling.__init__(self, ps, st, _tuple(padding, nd_, "padding", name), ceil_mode, False,
                      pool_type, layout, count_include_pad, **kwargs)


def _make_pool(nd_, name, pool_type, layout_default, global_pool=False):
    if global_pool:
        def __init__(self, layout=layout_default, **kwargs):
            if len(layout) != nd_ + 2:
                raise GpundaError(f"{name}: layout={layout!r} must have {nd_ + 2} letters")
            _Pooling.__init__(self, (1,) * nd_, None, (0,) * nd_, True, True, pool_type,
                              layout, **kwargs)
    elif pool_type == "max":
        def __init__(self, pool_size=2, strides=None, padding=0, layout=layout_default,
                     ceil_mode=False, **kwargs):
            _pool_init(self, name, nd_, pool_type, pool_size, strides, padding, ceil_mode,
                       layout, None, kwargs)
    else:
        # MXNet's AvgPool*D takes ceil_mode before layout (MaxPool*D the other way round)
        def __init__(self, pool_size=2, strides=None, padding=0, ceil_mode=False,
                     layout=layout_default, count_include_pad=True, **kwargs):
            _pool_init(self, name, nd_, pool_type, pool_size, strides, padding, ceil_mode,
                       layout, count_include_pad, kwargs)
    doc = (f"{'Global ' if global_pool else ''}{nd_}-D {pool_type} pooling (op Pooling), "
           f"layout {layout_default!r} by default.")
    cls = type(name, (_Pooling,), {"__init__": __init__, "__doc__": doc})
    cls.__module__ = __name__
    return cls


MaxPool1D = _make_pool(1, "MaxPool1D", "max", "NCW")
MaxPool2D = _make_pool(2, "MaxPool2D", "max", "NCHW")
MaxPool3D = _make_pool(3, "MaxPool3D", "max", "NCDHW")
AvgPool1D = _make_pool(1, "AvgPool1D", "avg", "NCW")
AvgPool2D = _make_pool(2, "AvgPool2D", "avg", "NCHW")
AvgPool3D = _make_pool(3, "AvgPool3D", "avg", "NCDHW")
GlobalMaxPool1D = _make_pool(1, "GlobalMaxPool1D", "max", "NCW", True)
GlobalMaxPool2D = _make_pool(2, "GlobalMaxPool2D", "max", "NCHW", True)
GlobalMaxPool3D = _make_pool(3, "GlobalMaxPool3D", "max", "NCDHW", True)
GlobalAvgPool1D = _make_pool(1, "GlobalAvgPool1D", "avg", "NCW", True)
GlobalAvgPool2D = _make_pool(2, "GlobalAvgPool2D", "avg", "NCHW", True)
GlobalAvgPool3D = _make_pool(3, "GlobalAvgPool3D", "avg", "NCDHW", True)


class ReflectionPad2D(HybridBlock):
    """Pad H and W by reflection (op pad, mode 'reflect')."""

    def __init__(self, padding=0, **kwargs):
        super().__init__(**kwargs)
        if isinstance(padding, (int, np.integer)):
            padding = (0, 0, 0, 0, padding, padding, padding, padding)
        if len(padding) != 8:
            raise GpundaError(f"ReflectionPad2D: padding={padding!r} must be an int or 8 values")
        self._padding = tuple(padding)

    def hybrid_forward(self, F, x):
        return F.pad(x, mode="reflect", pad_width=self._padding)
