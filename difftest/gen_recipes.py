"""Input shapes and parameters for ops the schema alone cannot drive.

``RECIPES[name](rng) -> (inputs, kwargs)``: inputs are ``(shape, dtype, stype, dist[,
{"lo", "hi"}])`` tuples (``interp.make_data`` draws the values), kwargs are JSON-able
(tuples as ``{"tuple": [...]}``). ``shape_pool(name)`` gives the shapes the generic
draw picks from, by op family.
"""
from __future__ import annotations

F = "float32"


def T(*v):
    return {"tuple": list(v)}


def _fdt(rng):
    return rng.choice([F, F, F, "float64", "float16"])


def shape_pool(name):
    """Shapes for a generic draw of op ``name``."""
    from gpunda.ops.registry import all_ops
    fam = all_ops()[name].family
    if fam in ("nn", "vision", "deformable", "correlation", "quantize"):
        return [(1, 2, 5, 5), (2, 3, 4, 4), (2, 3, 6)]
    if fam in ("linalg", "np_linalg"):
        return [(3, 3), (2, 3, 3), (2, 2)]
    if fam == "image":
        return [(4, 5, 3), (2, 4, 5, 3), (3, 4, 5)]
    if fam in ("optim",):
        return [(3, 4), (5,)]
    if fam in ("random", "np_random", "internal"):
        return [(2, 3), (20, 30)]
    if fam == "detection":
        return [(1, 6, 6), (2, 5, 6)]
    return [(3,), (2, 3), (2, 3, 4), (1, 4), (2, 1, 3), (4, 2)]


def conv(rng, deconv=False):
    nd = rng.choice([1, 2, 2])
    c, f, g = rng.choice([(2, 4, 1), (2, 2, 2), (3, 2, 1)])
    k = rng.choice([1, 2, 3])
    sp = [5] * nd
    kw = {"kernel": T(*[k] * nd), "num_filter": f}
    if g > 1:
        kw["num_group"] = g
    if rng.random() < 0.5:
        kw["stride"] = T(*[rng.choice([1, 2])] * nd)
    if rng.random() < 0.5:
        kw["pad"] = T(*[rng.choice([0, 1])] * nd)
    if not deconv and rng.random() < 0.3:
        kw["dilate"] = T(*[2] * nd)
    no_bias = rng.random() < 0.3
    if no_bias:
        kw["no_bias"] = True
    dt = _fdt(rng)
    w = [c, f // g] if deconv else [f, c // g]
    ins = [([2, c] + sp, dt, "default", "normal"), (w + [k] * nd, dt, "default", "normal")]
    if not no_bias:
        ins.append(([f], dt, "default", "normal"))
    return ins, kw


def fc(rng):
    flatten = rng.random() < 0.7
    h = rng.choice([1, 3])
    data = rng.choice([[2, 3], [2, 3, 2]])
    inp = (3 * (data[2] if len(data) == 3 and flatten else 1)) if len(data) == 3 else 3
    kw = {"num_hidden": h, "flatten": flatten}
    dt = _fdt(rng)
    ins = [(data, dt, "default", "normal"), ([h, inp], dt, "default", "normal")]
    if rng.random() < 0.3:
        kw["no_bias"] = True
    else:
        ins.append(([h], dt, "default", "normal"))
    return ins, kw


def batchnorm(rng):
    shape = rng.choice([[2, 3], [2, 3, 4], [2, 3, 2, 2]])
    axis = rng.choice([1, 1, -1])
    c = shape[axis]
    kw = {k: v for k, v in (("fix_gamma", rng.random() < 0.5), ("axis", axis),
                            ("use_global_stats", rng.random() < 0.3),
                            ("output_mean_var", rng.random() < 0.3), ("eps", 1e-3)) if True}
    dt = rng.choice([F, F, "float64"])
    return [(shape, dt, "default", "normal")] + [([c], dt, "default", d) for d in
                                                  ("pos", "normal", "normal", "pos")], kw


def norm_like(rng, n_params=2, axis_key="axis"):
    shape = rng.choice([[2, 3], [2, 3, 4]])
    kw = {}
    c = shape[-1]
    if n_params == 2 and axis_key and rng.random() < 0.3:
        kw[axis_key] = 1
        c = shape[1]
    return [(shape, F, "default", "normal")] + [([c], F, "default", "pos")] * n_params, kw


def instnorm(rng):
    shape = rng.choice([[2, 3, 4], [1, 2, 3, 3]])
    return [(shape, F, "default", "normal"), ([shape[1]], F, "default", "pos"),
            ([shape[1]], F, "default", "normal")], {"eps": 1e-3}


def embedding(rng):
    return [([2, 3], rng.choice([F, "int32"]), "default", "int", {"lo": 0, "hi": 5}),
            ([5, 4], F, "default", "normal")], {"input_dim": 5, "output_dim": 4}


def roi(rng, extra):
    def f(r):
        kw = {"pooled_size": T(2, 2), "spatial_scale": r.choice([1.0, 0.5])}
        kw.update(extra)
        return [([1, 2, 6, 6], F, "default", "normal"), ([2, 5], F, "default", "rois")], kw
    return f


def dot(rng, batch=False):
    ta, tb = rng.random() < 0.3, rng.random() < 0.3
    b = [2] if batch else []
    a = b + ([3, 2] if ta else [2, 3])
    c = b + ([4, 3] if tb else [3, 4])
    dt = rng.choice([F, F, "float64", "float16"])
    stype = "csr" if not batch and rng.random() < 0.15 else "default"
    return [(a, dt, stype, "normal"), (c, dt, "default", "normal")], {
        "transpose_a": ta, "transpose_b": tb}


def variadic(rng, key="num_args"):
    n = rng.choice([1, 2, 3])
    shape = rng.choice([[2, 3], [3], [2, 2, 2]])
    dt = rng.choice([F, "int32", "float64"])
    kw = {key: n} if key else {}
    return [(shape, dt, "default", "normal")] * n, kw


def concat(rng, name="dim"):
    ins, kw = variadic(rng)
    kw[name] = rng.choice([0, -1])
    return ins, kw


def softmax_output(rng):
    return [([3, 4], F, "default", "normal"), ([3], F, "default", "int", {"lo": 0, "hi": 4})], {}


def pick(rng):
    kw = {"axis": rng.choice([1, -1, 0])}
    if rng.random() < 0.3:
        kw["mode"] = rng.choice(["clip", "wrap"])
    if rng.random() < 0.3:
        kw["keepdims"] = True
    return [([3, 4], F, "default", "normal"), ([3], F, "default", "int", {"lo": 0, "hi": 3})], kw


def take(rng):
    kw = {}
    if rng.random() < 0.5:
        kw["mode"] = rng.choice(["clip", "wrap", "raise"])
    if rng.random() < 0.3:
        kw["axis"] = 1
    return [([4, 3], F, "default", "normal"),
            ([2, 2], rng.choice([F, "int32"]), "default", "int", {"lo": -1, "hi": 5})], kw


def one_hot(rng):
    return [([2, 3], rng.choice([F, "int32"]), "default", "int", {"lo": 0, "hi": 5})], {
        "depth": rng.choice([3, 5]), "dtype": rng.choice([F, "int32", "float64"])}


def gather_nd(rng):
    return [([3, 4], F, "default", "normal"), ([2, 2], "int32", "default", "int",
                                              {"lo": 0, "hi": 3})], {}


def where(rng):
    shape = [2, 3]
    cshape = rng.choice([shape, [2]])
    return [(cshape, F, "default", "bool"), (shape, F, "default", "normal"),
            (shape, F, "default", "normal")], {}


def quantize(rng):
    return [([2, 3], F, "default", "normal"), ([1], F, "default", "int", {"lo": -2, "hi": -1}),
            ([1], F, "default", "int", {"lo": 2, "hi": 3})], {
        "out_type": rng.choice(["uint8", "int8"])}


def dequantize(rng):
    return [([2, 3], rng.choice(["uint8", "int8"]), "default", "int", {"lo": 0, "hi": 100}),
            ([1], F, "default", "int", {"lo": -2, "hi": -1}),
            ([1], F, "default", "int", {"lo": 2, "hi": 3})], {}


def potrf_like(rng):
    return [(rng.choice([[3, 3], [2, 2, 2]]), rng.choice([F, "float64"]), "default", "spd")], {}


def gemm2(rng):
    ins, kw = dot(rng, batch=rng.random() < 0.5)
    ins = [(s, d, "default", dist) for s, d, _, dist in ins]
    if rng.random() < 0.3:
        kw["alpha"] = 2.0
    return ins, kw


def random_sampler(rng):
    return [], {"shape": T(*rng.choice([(2, 3), (20, 30), (40, 25)])),
                "dtype": rng.choice([F, F, "float64", "float16"])}


def pooling(rng):
    nd = rng.choice([1, 2, 2])
    kw = {"kernel": T(*[rng.choice([2, 3])] * nd), "pool_type": rng.choice(["max", "avg", "sum", "lp"])}
    if kw["pool_type"] == "lp":
        kw["p_value"] = rng.choice([1, 2])
    if rng.random() < 0.3:
        kw["global_pool"] = True
    if rng.random() < 0.5:
        kw["stride"] = T(*[rng.choice([1, 2])] * nd)
    if rng.random() < 0.3:
        kw["pad"] = T(*[1] * nd)
    if rng.random() < 0.3:
        kw["pooling_convention"] = rng.choice(["full", "same"])
    if rng.random() < 0.3 and kw["pool_type"] == "avg":
        kw["count_include_pad"] = False
    return [([1, 2] + [6] * nd, _fdt(rng), "default", "normal")], kw


RECIPES = {
    "Convolution": conv, "Deconvolution": lambda r: conv(r, deconv=True),
    "FullyConnected": fc, "BatchNorm": batchnorm, "LayerNorm": norm_like,
    "InstanceNorm": instnorm, "Embedding": embedding, "Pooling": pooling,
    "ROIPooling": roi(None, {}), "_contrib_ROIAlign": roi(None, {"sample_ratio": 2}),
    "dot": dot, "batch_dot": lambda r: dot(r, batch=True), "_linalg_gemm2": gemm2,
    "Concat": concat, "stack": lambda r: concat(r, "axis"), "add_n": variadic,
    "SoftmaxOutput": softmax_output, "pick": pick, "take": take, "one_hot": one_hot,
    "gather_nd": gather_nd, "where": where, "_contrib_quantize": quantize,
    "_contrib_dequantize": dequantize, "_linalg_potrf": potrf_like,
    "_linalg_potri": potrf_like, "_linalg_inverse": potrf_like, "_linalg_det": potrf_like,
    "_linalg_slogdet": potrf_like, "_linalg_sumlogdiag": potrf_like,
    "_random_uniform": random_sampler, "_random_normal": random_sampler,
    "_random_exponential": random_sampler, "_random_gamma": random_sampler,
    "_random_poisson": random_sampler, "_random_negative_binomial": random_sampler,
    "_random_generalized_negative_binomial": random_sampler, "_random_randint":
        lambda r: ([], {"low": 0, "high": 10, "shape": T(*r.choice([(2, 3), (30, 30)]))}),
}
