"""Converters: Convolution, Deconvolution, Pooling, UpSampling, resizes, depth/space."""
from __future__ import annotations

from gpunda.onnx._registry import register


def _spatial(node, nd, name, default):
    v = tuple(getattr(node.p, name) or ())
    return list(v) if v else [default] * nd


def _check_layout(g, node, nd):
    layout = getattr(node.p, "layout", None)
    if layout not in (None, "NCW", "NCHW", "NCDHW"):
        raise g.unsupported(node, f"layout={layout!r} (ONNX convolutions are channel-first)")


@register("Convolution")
def convolution(g, node):
    p = node.p
    nd = len(p.kernel)
    _check_layout(g, node, nd)
    pad = _spatial(node, nd, "pad", 0)
    ins = [g.inp(node, 0), g.inp(node, 1)] + ([] if p.no_bias else [g.inp(node, 2)])
    g.add("Conv", ins, [g.out(node)], kernel_shape=list(p.kernel),
          strides=_spatial(node, nd, "stride", 1), dilations=_spatial(node, nd, "dilate", 1),
          pads=pad + pad, group=int(p.num_group))


@register("Deconvolution")
def deconvolution(g, node):
    p = node.p
    nd = len(p.kernel)
    _check_layout(g, node, nd)
    stride = _spatial(node, nd, "stride", 1)
    dil = _spatial(node, nd, "dilate", 1)
    pad = _spatial(node, nd, "pad", 0)
    in_sp = g.in_shape(node, 0)[2:]
    out_sp = g.out_shape(node)[2:]
    target = tuple(p.target_shape or ())
    by_target = any(t > 0 for t in target)
    begin, end, extra = [], [], []
    for i in range(nd):
        full = stride[i] * (in_sp[i] - 1) + dil[i] * (p.kernel[i] - 1) + 1
        total = full - out_sp[i]
        # MXNet crops ``pad`` rows in front (with target_shape: the larger half) and the
        # rest at the end; a negative rest is ONNX's output_padding
        b = (total + 1) // 2 if by_target else pad[i]
        e = total - b
        begin.append(b)
        end.append(max(e, 0))
        extra.append(max(-e, 0))
    ins = [g.inp(node, 0), g.inp(node, 1)] + ([] if p.no_bias else [g.inp(node, 2)])
    g.add("ConvTranspose", ins, [g.out(node)], kernel_shape=list(p.kernel), strides=stride,
          dilations=dil, pads=begin + end, group=int(p.num_group),
          output_padding=extra if any(extra) else None)


@register("Pooling")
def pooling(g, node):
    p = node.p
    nd = len(g.in_shape(node, 0)) - 2
    _check_layout(g, node, nd)
    x, out = g.inp(node, 0), g.out(node)
    kind = p.pool_type
    if kind not in ("max", "avg", "lp"):
        raise g.unsupported(node, f"pool_type={kind!r}")
    if p.global_pool:
        if kind == "lp":
            g.add("GlobalLpPool", [x], [out], p=int(p.p_value or 2))
        else:
            g.add("GlobalMaxPool" if kind == "max" else "GlobalAveragePool", [x], [out])
        return
    if p.pooling_convention == "same":
        raise g.unsupported(node, "pooling_convention='same'")
    kernel = list(p.kernel)
    pad = _spatial(node, nd, "pad", 0)
    stride = _spatial(node, nd, "stride", 1)
    ceil = 1 if p.pooling_convention == "full" else None
    if kind == "max":
        g.add("MaxPool", [x], [out], kernel_shape=kernel, strides=stride, pads=pad + pad,
              ceil_mode=ceil)
    elif kind == "avg":
        inc = True if p.count_include_pad is None else p.count_include_pad
        g.add("AveragePool", [x], [out], kernel_shape=kernel, strides=stride, pads=pad + pad,
              ceil_mode=ceil, count_include_pad=int(inc))
    else:
        if ceil:
            raise g.unsupported(node, "lp pooling with pooling_convention='full'")
        g.add("LpPool", [x], [out], kernel_shape=kernel, strides=stride, pads=pad + pad,
              p=int(p.p_value or 2))


def _resize(g, node, x, scales=None, sizes=None, mode="nearest", coord="asymmetric"):
    roi = ""
    ins = [x, roi, g.const(scales, "float32", "scales") if scales is not None else ""]
    if sizes is not None:
        ins.append(g.ints(sizes, "sizes"))
    extra = {"nearest_mode": "floor"} if mode == "nearest" else {}
    g.add("Resize", ins, [g.out(node)], mode=mode, coordinate_transformation_mode=coord, **extra)


@register("UpSampling")
def upsampling(g, node):
    p = node.p
    if p.sample_type != "nearest":
        raise g.unsupported(node, "sample_type='bilinear' (a learned deconvolution)")
    if len(node.inputs) != 1:
        raise g.unsupported(node, f"{len(node.inputs)} inputs (only one is exported)")
    s = float(p.scale)
    _resize(g, node, g.inp(node, 0), scales=[1.0, 1.0, s, s])


@register("_contrib_BilinearResize2D")
def bilinear_resize(g, node):
    p = node.p
    if p.mode not in (None, "size", "odd_scale") or len(node.inputs) != 1:
        raise g.unsupported(node, f"mode={p.mode!r}")
    coord = "align_corners" if p.align_corners else "half_pixel"
    _resize(g, node, g.inp(node, 0), sizes=list(g.out_shape(node)), mode="linear", coord=coord)


@register("_contrib_AdaptiveAvgPooling2D")
def adaptive_avg_pool(g, node):
    x, out = g.inp(node, 0), g.out(node)
    in_sp, out_sp = g.in_shape(node, 0)[2:], g.out_shape(node)[2:]
    if all(o == 1 for o in out_sp):
        g.add("GlobalAveragePool", [x], [out])
        return
    if any(i % o for i, o in zip(in_sp, out_sp)):
        raise g.unsupported(node, f"output size {tuple(out_sp)} does not divide the input "
                                  f"{tuple(in_sp)}")
    k = [i // o for i, o in zip(in_sp, out_sp)]
    g.add("AveragePool", [x], [out], kernel_shape=k, strides=k)


@register("depth_to_space")
def depth_to_space(g, node):
    g.add("DepthToSpace", [g.inp(node, 0)], [g.out(node)], blocksize=int(node.p.block_size),
          mode="DCR")


@register("space_to_depth")
def space_to_depth(g, node):
    g.add("SpaceToDepth", [g.inp(node, 0)], [g.out(node)], blocksize=int(node.p.block_size))
