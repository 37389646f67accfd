"""Programs that call one op of gpunda's registry through MXNet's public API.

Every canonical, non-internal op whose public function exists in MXNet 1.9.1
(``mxnet_api.json``, dumped from MXNet) gets programs with random inputs (shape,
dtype, storage type) and random parameters drawn from its schema. Ops whose
required parameters or input shapes cannot be guessed from the schema get a recipe
in ``gen_recipes.RECIPES``. Invalid draws are kept: the exception class is compared.
"""
from __future__ import annotations

import json
import os
import random

from difftest.gen_recipes import RECIPES, shape_pool

_API = json.load(open(os.path.join(os.path.dirname(__file__), "mxnet_api.json")))
SKIP_FAMILIES = {"control_flow", "custom", "image_io", "ndarray_funcs", "dgl"}
SKIP_OPS = {"Custom", "_NDArray", "_Native", "_CachedOp", "_set_value", "_copyto", "_imdecode"}
PREFIXES = (("_contrib_", "nd.contrib"), ("_linalg_", "nd.linalg"), ("_image_", "nd.image"),
            ("_random_", "nd.random"), ("_sparse_", "nd.sparse"))
DTYPES = ["float32"] * 6 + ["float64", "float16", "int32", "int64", "uint8", "int8", "bool"]
RANDOM_FAMILIES = {"np_random"}


def public_path(name):
    """Where MXNet 1.9.1 exposes op ``name`` to Python, or None."""
    if not name.startswith("_") and name in _API["nd"]:
        return "nd." + name
    for pre, mod in PREFIXES:
        if name.startswith(pre) and name[len(pre):] in _API[mod]:
            return mod + "." + name[len(pre):]
    for pre in ("_npi_", "_np_", "_npx_"):
        if name.startswith(pre):
            short = name[len(pre):]
            for mod in (("npx",) if pre == "_npx_" else ("np", "np.linalg", "np.random", "npx")):
                if short in _API[mod]:
                    return mod + "." + short
            return None
    if name in _API["nd._internal"] and not name.startswith("_backward"):
        return "nd._internal." + name
    return None


def candidate_ops():
    """(family, name, path) of every op the generator covers, sorted."""
    from gpunda.ops.registry import all_ops
    out = []
    for name, op in all_ops().items():
        if ("backward" in name or name.endswith("_grad") or name in SKIP_OPS
                or op.family in SKIP_FAMILIES):
            continue
        path = public_path(name)
        if path is None or (op.hidden and not path.startswith(("np", "npx"))):
            continue
        if not isinstance(op.inputs, tuple) and name not in RECIPES:
            continue
        out.append((op.family or "internal", name, path))
    return sorted(out)


def _tuple(v):
    return {"tuple": list(v)}


def draw_param(rng, p, ndim):
    """A random value for registry Param ``p`` (JSON-able; tuples as {"tuple": ...})."""
    k, n = p.kind, p.name
    if p.choices:
        return rng.choice(list(p.choices))
    if k == "bool":
        return rng.random() < 0.5
    if n in ("axis", "dim") or k == "axis":
        r = rng.random()
        if k == "axis" and r < 0.2:
            return _tuple(sorted(rng.sample(range(max(ndim, 1)), min(2, max(ndim, 1)))))
        return rng.randint(-max(ndim, 1), max(ndim, 1) - 1)
    if k == "int":
        return rng.choice([0, 1, 1, 2, 3])
    if k == "float":
        return rng.choice([0.5, 1.0, 2.0, 0.1, -1.0, 1e-3])
    if k in ("shape", "shape_none", "ints"):
        return _tuple(rng.choice([(2,), (1, 2), (2, 2), (), (3, -1)]))
    if k in ("floats", "float_or_tuple"):
        return rng.choice([0.5, _tuple([0.5, 1.0])])
    if k in ("dtype", "dtype_bf16"):
        return rng.choice(["float32", "float64", "float16", "int32", "int64", "uint8"])
    return None


def gen_op_program(rng, fam, name, path, pid, op):
    """One program calling ``path`` (op ``name``) with random inputs and parameters."""
    api = "np" if path.startswith(("np", "npx")) else "nd"
    recipe = RECIPES.get(name)
    if recipe is not None:
        inputs, kwargs = recipe(rng)
    else:
        shape = rng.choice(shape_pool(name))
        dtype = rng.choice(DTYPES) if rng.random() < 0.4 else "float32"
        dist = "pos" if rng.random() < 0.3 else ("unit" if rng.random() < 0.3 else "normal")
        if "sample" in name or "random" in name:   # distribution parameters
            dist = "pos"
        inputs = []
        for j, _ in enumerate(op.inputs):
            s = shape
            if j and rng.random() < 0.3:      # a broadcastable second operand
                s = tuple(1 if rng.random() < 0.5 else d for d in shape)
            stype = "default"
            if api == "nd" and rng.random() < 0.1 and len(s) == 2:
                stype = rng.choice(["csr", "row_sparse"])
            inputs.append((list(s), dtype, stype, dist))
        kwargs = {}
        from gpunda.ops.registry import REQUIRED
        for p in op.params:
            if p.name in ("name", "out", "ctx", "cudnn_tune", "cudnn_off", "workspace"):
                continue
            if p.default is REQUIRED or rng.random() < 0.3:
                v = draw_param(rng, p, len(shape))
                if v is not None:
                    kwargs[p.name] = v
    steps = []
    for j, inp in enumerate(inputs):
        s, dt, st, dist = inp[:4]
        extra = inp[4] if len(inp) > 4 else {}
        steps.append(["input", "x%d" % j, list(s), dt, st, dist, api] +
                     ([extra.get("lo", 0), extra.get("hi", 4)] if extra else []))
    random_op = bool(op.random) or fam in RANDOM_FAMILIES or "random" in path or "sample" in name
    steps.append(["call", "y", path, ["@x%d" % j for j in range(len(inputs))], kwargs, random_op])
    return {"id": pid, "kind": "op", "family": fam, "op": name, "seed": rng.randrange(2 ** 31),
            "steps": steps}


def generate(n_per_op=20, seed=0, only=None):
    """``n_per_op`` programs for every candidate op (``only``: a set of op names)."""
    from gpunda.ops.registry import all_ops
    ops = all_ops()
    progs = []
    for fam, name, path in candidate_ops():
        if only and name not in only:
            continue
        rng = random.Random("%d-%s" % (seed, name))
        for k in range(n_per_op):
            progs.append(gen_op_program(rng, fam, name, path, "op-%s-%d" % (name, k), ops[name]))
    return progs
