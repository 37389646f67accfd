"""Programs beyond single ops: indexing reads/writes, autograd, Gluon hybridize, save/load.

Each ``gen_<kind>(rng, pid)`` returns one program (see ``interp``); ``generate(kind, n,
seed)`` returns ``n`` of them. Names: ``a`` is the base array, ``r*`` reads, ``g*`` grads.
"""
from __future__ import annotations

import random

F = "float32"


def _slice(rng, n):
    a = rng.choice([None, 0, 1, -1, -2])
    b = rng.choice([None, n, 2, -1, 1])
    c = rng.choice([None, None, 1, 2, -1])
    return {"s": [a, b, c]}


def _index(rng, shape, env_arrays):
    """A random basic or advanced index for an array of ``shape``."""
    r = rng.random()
    nd = len(shape)
    if r < 0.2:
        return rng.randint(-shape[0], shape[0] - 1)
    if r < 0.45:
        return _slice(rng, shape[0])
    if r < 0.75:
        items = []
        for d in shape[:rng.randint(1, nd)]:
            items.append(rng.choice([rng.randint(0, d - 1), _slice(rng, d)]))
        if rng.random() < 0.2:
            items.insert(rng.randint(0, len(items)), rng.choice([None, "..."]))
        return items
    if r < 0.85:
        env_arrays.append(("ix", [rng.choice([2, 3])], "int32", "int", {"lo": -shape[0],
                                                                     "hi": shape[0]}))
        return "@ix"
    if r < 0.93:
        return {"l": [rng.randint(0, shape[0] - 1) for _ in range(rng.choice([1, 2, 3]))]}
    env_arrays.append(("mask", list(shape[:1]), "bool", "bool", {}))
    return "@mask"


def gen_indexing(rng, pid):
    shape = rng.choice([(4,), (3, 4), (2, 3, 4), (4, 1, 3)])
    dtype = rng.choice([F, F, "int32", "float64", "uint8"])
    api = "np" if rng.random() < 0.3 else "nd"
    steps = [["input", "a", list(shape), dtype, "default", "int" if dtype != F else "normal",
              api, 0, 9]]
    extra = []
    idx = _index(rng, shape, extra)
    for name, s, dt, dist, kw in extra:
        steps.append(["input", name, s, dt, "default", dist, api, kw.get("lo", 0), kw.get("hi", 2)])
    steps.append(["getitem", "r0", "a", idx])
    steps.append(["snap", "r0s", "r0"])
    r = rng.random()
    if r < 0.4:
        steps.append(["setitem", None, "a", idx, rng.choice([5, -1.5, 0])])
    elif r < 0.6:
        steps.append(["setitem", None, "a", idx, "@r0s"])
    elif r < 0.8:                        # write through the read: view or copy?
        steps.append(["setitem", None, "r0", {"s": [None, None, None]}, 7])
    else:
        idx2 = _index(rng, shape, [])
        steps.append(["getitem", "r1", "a", idx2 if not isinstance(idx2, str) else 0])
    steps.append(["snap", "final", "a"])
    return {"id": pid, "kind": "indexing", "seed": rng.randrange(2 ** 31), "steps": steps}


UNARY = ["nd.relu", "nd.sigmoid", "nd.tanh", "nd.exp", "nd.square", "nd.sin", "nd.abs",
         "nd.softmax", "nd.log_softmax", "nd.sum", "nd.mean", "nd.norm", "nd.flatten",
         "nd.sqrt", "nd.cumsum" if False else "nd.max", "nd.Activation"]
BINARY = ["nd.broadcast_add", "nd.broadcast_mul", "nd.broadcast_div", "nd.elemwise_sub",
          "nd.dot", "nd.broadcast_maximum", "nd.broadcast_power"]


def gen_autograd(rng, pid):
    shape = rng.choice([[2, 3], [3, 3], [4]])
    req = rng.choice(["write", "add", "null"])
    steps = [["input", "x", shape, F, "default", "pos"], ["input", "w", shape, F, "default",
                                                           "normal"],
             ["attach_grad", None, "x", req], ["attach_grad", None, "w", rng.choice(["write",
                                                                                    "add"])]]
    body, cur = [], "x"
    for k in range(rng.randint(1, 3)):
        if rng.random() < 0.6:
            fn = rng.choice(UNARY)
            kw = {"act_type": rng.choice(["relu", "tanh", "softrelu"])} if fn == "nd.Activation" else {}
            body.append(["call", "h%d" % k, fn, ["@" + cur], kw])
        else:
            fn = rng.choice(BINARY)
            other = "w" if fn != "nd.dot" or shape[0] == shape[-1] else "x"
            body.append(["call", "h%d" % k, fn, ["@" + cur, "@" + other], {}])
        cur = "h%d" % k
    if rng.random() < 0.3:
        body.append(["pause", None, False, [["call", "p0", "nd.exp", ["@" + cur], {}]]])
    if rng.random() < 0.2:
        body.append(["call", "hb", "nd.BlockGrad", ["@" + cur], {}])
        body.append(["call", "hc", "nd.elemwise_add", ["@hb", "@" + cur], {}])
        cur = "hc"
    steps.append(["record", None, rng.random() < 0.8, body])
    retain = rng.random() < 0.4
    steps.append(["backward", None, cur, None, retain])
    steps.append(["grad", "gx", "x"])
    steps.append(["grad", "gw", "w"])
    if retain:
        steps.append(["backward", None, cur, None, False])
        steps.append(["grad", "gx2", "x"])
        steps.append(["grad", "gw2", "w"])
    return {"id": pid, "kind": "autograd", "seed": rng.randrange(2 ** 31), "steps": steps}


def gen_batchnorm_train(rng, pid):
    shape = rng.choice([[2, 3], [2, 3, 4]])
    c = [shape[1]]
    steps = [["input", "x", shape, F, "default", "normal"], ["input", "g", c, F, "default", "pos"],
             ["input", "b", c, F, "default", "normal"], ["input", "mm", c, F, "default", "normal"],
             ["input", "mv", c, F, "default", "pos"], ["attach_grad", None, "x", "write"],
             ["attach_grad", None, "g", "write"],
             ["record", None, rng.random() < 0.8,
              [["call", "y", "nd.BatchNorm", ["@x", "@g", "@b", "@mm", "@mv"],
                {"fix_gamma": rng.random() < 0.5, "momentum": 0.9}]]],
             ["snap", "mm_fwd", "mm"], ["snap", "mv_fwd", "mv"],
             ["backward", None, "y"], ["grad", "gx", "x"], ["grad", "gg", "g"]]
    return {"id": pid, "kind": "autograd-bn", "seed": rng.randrange(2 ** 31), "steps": steps}


BLOCKS = [
    lambda r: (["Dense", {"units": r.choice([2, 3]), "activation": r.choice([None, "relu", "tanh"])}], [2, 4]),
    lambda r: (["Conv2D", {"channels": 2, "kernel_size": r.choice([1, 3]), "padding": r.choice([0, 1])}],
               [1, 2, 5, 5]),
    lambda r: (["BatchNorm", {}], [2, 3, 4]),
    lambda r: (["LayerNorm", {}], [2, 5]),
    lambda r: (["MaxPool2D", {"pool_size": 2}], [1, 2, 4, 4]),
    lambda r: (["GlobalAvgPool2D", {}], [1, 2, 4, 4]),
    lambda r: (["Embedding", {"input_dim": 6, "output_dim": 3}], [2, 3]),
    lambda r: (["HybridSequential", {"children": [["Dense", {"units": 4, "activation": "relu"}],
                                                  ["Dense", {"units": 2}]]}], [3, 5]),
    lambda r: (["HybridSequential", {"children": [["Conv2D", {"channels": 2, "kernel_size": 3}],
                                                  ["BatchNorm", {}], ["Activation", {"activation": "relu"}],
                                                  ["Flatten", {}], ["Dense", {"units": 2}]]}],
               [2, 1, 5, 5]),
]


def gen_gluon(rng, pid):
    spec, shape = rng.choice(BLOCKS)(rng)
    dist = "int" if spec[0] == "Embedding" else "normal"
    train = rng.random() < 0.4
    steps = [["input", "x", shape, F, "default", dist, "nd", 0, 6],
             ["block", "net", spec, rng.randrange(1000)],
             ["forward", "y_imp", "net", ["x"], train],
             ["hybridize", None, "net", rng.choice([{}, {"static_alloc": True},
                                                    {"static_alloc": True, "static_shape": True}])],
             ["forward", "y_hyb", "net", ["x"], train],
             ["forward", "y_hyb2", "net", ["x"], train],
             ["params", "params", "net"]]
    return {"id": pid, "kind": "gluon", "seed": rng.randrange(2 ** 31), "steps": steps}


def gen_saveload(rng, pid):
    steps, names = [], []
    for k in range(rng.randint(1, 3)):
        dt = rng.choice([F, "float64", "float16", "int32", "int64", "uint8", "int8", "bool"])
        st = rng.choice(["default", "default", "csr", "row_sparse"]) if dt != "bool" else "default"
        shape = rng.choice([[3, 4], [2, 3], [5], [2, 2, 2], [0, 3]])
        if st != "default" and len(shape) != 2:
            st = "default"
        steps.append(["input", "v%d" % k, shape, dt, st, "sparse" if st != "default" else "normal"])
        names.append("v%d" % k)
    data = {"k%d" % i: n for i, n in enumerate(names)} if rng.random() < 0.5 else names
    steps += [["save", "bytes", "f", data], ["load", "own", "f", "own"],
              ["load", "cross", "f", "foreign"]]
    return {"id": pid, "kind": "saveload", "seed": rng.randrange(2 ** 31), "steps": steps}


GENERATORS = {"indexing": gen_indexing, "autograd": gen_autograd, "autograd-bn": gen_batchnorm_train,
              "gluon": gen_gluon, "saveload": gen_saveload}


def generate(kind, n, seed=0):
    """``n`` programs of ``kind`` (a key of GENERATORS)."""
    rng = random.Random("%d-%s" % (seed, kind))
    return [GENERATORS[kind](rng, "%s-%d" % (kind, k)) for k in range(n)]
