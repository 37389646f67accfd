"""Run difftest programs under real MXNet 1.9.1 or under gpunda.

This file imports neither framework at module level and uses only NumPy APIs that
exist in NumPy 1.23 and 2.x, so MXNet's Python runs it (``difftest.runner``) and the
replay test runs it in-process on gpunda: one text, two frameworks.

A program is JSON: ``{"id", "kind", "seed", "steps"}``. Each step is a list whose
first item names it (see ``Interp.step_<name>``). A value in ``args``/``kwargs``
written ``"@x"`` is the environment entry ``x``; index expressions use the encoding
of ``decode_index``. A step that raises stores the exception under its output name and
the program goes on; a later step that reads it raises ``_Skip`` and stores that.
Every entry of the environment is normalised at the end (``normalise``).
"""
from __future__ import annotations

import os
import tempfile

import numpy as np


class _Skip(Exception):
    """A step read an entry that holds an exception."""


def load_framework(name):
    """``mxnet`` or ``gpunda``, imported as the module the programs call ``mx``."""
    if name == "mxnet":
        import mxnet as mx
    else:
        import gpunda as mx
    return mx


def make_data(seed, shape, dtype, dist, lo=0, hi=4):
    """Deterministic input data: the same bytes under NumPy 1.23 and 2.x (RandomState)."""
    rng = np.random.RandomState(seed % (2 ** 32))
    shape = tuple(shape)
    if dist == "normal":
        v = rng.standard_normal(shape)
    elif dist == "pos":
        v = rng.uniform(0.2, 2.0, shape)
    elif dist == "unit":
        v = rng.uniform(-0.95, 0.95, shape)
    elif dist == "prob":
        v = rng.uniform(0.05, 1.0, shape)
        v = v / v.sum(axis=-1, keepdims=True) if v.ndim else v
    elif dist == "int":
        v = rng.randint(lo, hi, size=shape)
    elif dist == "bool":
        v = rng.randint(0, 2, size=shape).astype(bool)
    elif dist == "sparse":
        v = rng.standard_normal(shape) * (rng.uniform(0, 1, shape) < 0.4)
    elif dist == "spd":
        a = rng.standard_normal(shape)
        v = np.matmul(a, np.swapaxes(a, -1, -2)) + shape[-1] * np.eye(shape[-1])
    elif dist == "rois":                  # [batch 0, x1, y1, x2, y2] boxes inside 6x6
        lo_ = rng.uniform(0, 2.5, shape[:-1] + (2,))
        v = np.concatenate([np.zeros(shape[:-1] + (1,)), lo_,
                            lo_ + rng.uniform(1, 3, shape[:-1] + (2,))], axis=-1)
    else:
        raise ValueError(dist)
    return np.asarray(v).astype(dtype)


def decode_index(spec, env):
    """JSON index -> Python index: list = tuple, {"s": [a, b, c]} = slice, "..." =
    Ellipsis, null = None, {"l": [...]} = a Python list, "@x" = array ``x``."""
    if isinstance(spec, list):
        return tuple(decode_index(s, env) for s in spec)
    if isinstance(spec, dict):
        if "s" in spec:
            return slice(*spec["s"])
        return list(spec["l"])
    if spec == "...":
        return Ellipsis
    if isinstance(spec, str) and spec.startswith("@"):
        return env.get(spec[1:])
    return spec


def error_class(mx, exc):
    """The exception's class as both frameworks spell it: MXNetError for the
    framework's own error class (and subclasses), else the Python class name."""
    if isinstance(exc, _Skip):
        return "Skip"
    if isinstance(exc, mx.base.MXNetError):
        # gpunda's GpundaIndexError etc. derive from MXNetError and from the Python class
        # MXNet raises there (docs/compat.md): that Python class is the one to compare
        for cls in _PY_CLASSES:
            if isinstance(exc, cls):
                return cls.__name__
        return "MXNetError"
    return type(exc).__name__


_PY_CLASSES = (IndexError, ValueError, TypeError, KeyError, NotImplementedError,
               AttributeError, AssertionError)


class Interp:
    """Interpreter of one program against framework module ``mx``."""

    def __init__(self, mx, prog, foreign=None, workdir=None):
        self.mx = mx
        self.prog = prog
        self.seed = int(prog.get("seed", 0))
        self.env = {}
        self.initial = {}            # input name -> its data, to flag untouched inputs
        self.random = set()          # entries whose values come from a random stream
        self.files = {}              # save tag -> bytes written
        self.foreign = foreign or {}  # save tag -> bytes written by the other framework
        self.workdir = workdir
        self.blocks = {}

    # -- helpers ---------------------------------------------------------------
    def val(self, x):
        if isinstance(x, str) and x.startswith("@"):
            v = self.env[x[1:]]
            if isinstance(v, BaseException):
                raise _Skip(x)
            return v
        if isinstance(x, list):
            return [self.val(i) for i in x]
        if isinstance(x, dict) and "tuple" in x:
            return tuple(self.val(i) for i in x["tuple"])
        return x

    def resolve(self, path):
        obj = self.mx
        for part in path.split("."):
            obj = getattr(obj, part)
        return obj

    def run(self):
        # mx.np arrays are meant to run under NumPy semantics (npx.set_np); MXNet's
        # legacy semantics for them (a[1] keeps an axis, no zero-size arrays) differ
        np_mode = any(st[0] == "input" and len(st) > 6 and st[6] == "np"
                      for st in self.prog["steps"])
        if np_mode:
            self.mx.npx.set_np()
        try:
            # fresh name counters per program (dense0_weight, ...), so a program's names do
            # not depend on what ran before it in the process, on either side
            with self.mx.name.NameManager():
                for i, st in enumerate(self.prog["steps"]):
                    self.do(st, i)
        finally:
            if np_mode:
                self.mx.npx.reset_np()
        return self.env

    def do(self, st, i):
        name, out = st[0], st[1] if len(st) > 1 else None
        try:
            getattr(self, "step_" + name)(i, *st[1:])
        except Exception as e:  # the exception is a result to compare
            if isinstance(out, list):
                for o in out:
                    self.env[o] = e
            elif isinstance(out, str):
                self.env[out] = e
            else:
                self.env.setdefault("!%d" % i, e)

    def _store(self, out, res, random=False):
        if isinstance(out, list):
            res = list(res) if isinstance(res, (list, tuple)) else [res]
            for o, r in zip(out, res):
                self.env[o] = r
                if random:
                    self.random.add(o)
        else:
            self.env[out] = res
            if random:
                self.random.add(out)

    # -- steps -----------------------------------------------------------------
    def step_input(self, i, out, shape, dtype, stype="default", dist="normal", api="nd",
                   lo=0, hi=4):
        data = make_data(self.seed * 1009 + i, shape, dtype, dist, lo, hi)
        if api == "np":
            arr = self.mx.np.array(data, dtype=dtype)
        else:
            arr = self.mx.nd.array(data, dtype=dtype)
            if stype != "default":
                arr = arr.tostype(stype)
        self.env[out] = arr
        self.initial[out] = data

    def step_call(self, i, out, fn, args=(), kwargs=None, random=False):
        f = self.resolve(fn)
        res = f(*[self.val(a) for a in args], **{k: self.val(v) for k, v in (kwargs or {}).items()})
        self._store(out, res, random)

    def step_method(self, i, out, obj, meth, args=(), kwargs=None):
        f = getattr(self.val("@" + obj), meth)
        res = f(*[self.val(a) for a in args], **{k: self.val(v) for k, v in (kwargs or {}).items()})
        if out is not None:
            self._store(out, res)

    def step_getitem(self, i, out, base, index):
        self.env[out] = self.val("@" + base)[decode_index(index, self.env)]

    def step_setitem(self, i, out, base, index, value):
        self.val("@" + base)[decode_index(index, self.env)] = self.val(value)

    def step_snap(self, i, out, name):
        """A copy of ``name`` now, so later in-place writes cannot change it."""
        v = self.val("@" + name)
        self.env[out] = v.copy()

    def step_attach_grad(self, i, out, name, grad_req="write", stype=None):
        kw = {"grad_req": grad_req}
        if stype:
            kw["stype"] = stype
        self.val("@" + name).attach_grad(**kw)

    def step_record(self, i, out, train_mode, steps):
        with self.mx.autograd.record(train_mode=train_mode):
            for j, st in enumerate(steps):
                self.do(st, i * 100 + j)

    def step_pause(self, i, out, train_mode, steps):
        with self.mx.autograd.pause(train_mode=train_mode):
            for j, st in enumerate(steps):
                self.do(st, i * 100 + j)

    def step_backward(self, i, out, name, head=None, retain_graph=False, train_mode=True):
        y = self.val("@" + name)
        h = self.val("@" + head) if head else None
        y.backward(out_grad=h, retain_graph=retain_graph, train_mode=train_mode)

    def step_grad(self, i, out, name):
        g = self.val("@" + name).grad
        self.env[out] = None if g is None else g.copy()

    def step_block(self, i, out, spec, seed=0):
        net = self.build(spec)
        net.initialize()
        self.blocks[out] = (net, seed)

    def build(self, spec):
        kind, kw = spec[0], dict(spec[1]) if len(spec) > 1 else {}
        nn = self.mx.gluon.nn
        if kind in ("HybridSequential", "Sequential"):
            children = kw.pop("children")
            net = getattr(nn, kind)()
            for c in children:
                net.add(self.build(c))
            return net
        return getattr(nn, kind)(**kw)

    def _set_params(self, net, seed):
        for k, (pname, p) in enumerate(net.collect_params().items()):
            if p.shape is None or any(s == 0 for s in p.shape):
                continue
            dist = "pos" if pname.endswith(("var", "gamma")) else "unit"
            p.set_data(self.mx.nd.array(make_data(seed + k, p.shape, "float32", dist)))

    def step_forward(self, i, out, block, inputs, train=False):
        net, seed = self.blocks[block]
        xs = [self.val("@" + x) for x in inputs]
        if seed is not None:
            net(*xs)                      # finish deferred init before setting values
            self._set_params(net, seed)
            self.blocks[block] = (net, None)
        if train:
            with self.mx.autograd.record():
                self.env[out] = net(*xs)
        else:
            self.env[out] = net(*xs)

    def step_hybridize(self, i, out, block, kwargs=None):
        self.blocks[block][0].hybridize(**(kwargs or {}))

    def step_params(self, i, out, block):
        net = self.blocks[block][0]
        params = net.collect_params()
        pre = net.prefix
        self.env[out] = {k[len(pre):] if k.startswith(pre) else k: p.data().copy()
                         for k, p in params.items()}

    def step_save(self, i, out, tag, data):
        path = os.path.join(self.workdir, "%s-%s.nd" % (self.prog["id"], tag))
        obj = ({k: self.val("@" + v) for k, v in data.items()} if isinstance(data, dict)
               else [self.val("@" + v) for v in data])
        self.mx.nd.save(path, obj)
        with open(path, "rb") as f:
            self.files[tag] = f.read()
        self.env[out] = np.frombuffer(self.files[tag], dtype=np.uint8).copy()

    def step_load(self, i, out, tag, mode="own"):
        blob = self.foreign.get(tag) if mode == "foreign" else self.files.get(tag)
        if blob is None:
            raise _Skip(tag)
        path = os.path.join(self.workdir, "%s-%s-%s.in" % (self.prog["id"], tag, mode))
        with open(path, "wb") as f:
            f.write(blob)
        self.env[out] = self.mx.nd.load(path)

    def step_seed(self, i, out, seed):
        self.mx.random.seed(seed)


def normalise(mx, it):
    """The program's environment as plain data: {name: entry}, entry is
    {"t": "a", dtype, shape, stype, v | same} for arrays, "l"/"d" for lists/dicts,
    "e" with the class name for exceptions, "s" for Python scalars, "n" for None."""
    def one(name, v):
        if isinstance(v, BaseException):
            return {"t": "e", "cls": error_class(mx, v)}
        if v is None:
            return {"t": "n"}
        if isinstance(v, (bool, int, float, str)):
            return {"t": "s", "v": v}
        if isinstance(v, np.ndarray):
            return {"t": "a", "dtype": v.dtype.name, "shape": list(v.shape), "stype": "numpy",
                    "v": v}
        if isinstance(v, (list, tuple)):
            return {"t": "l", "items": [one(name, x) for x in v]}
        if isinstance(v, dict):
            keys = sorted(v)
            return {"t": "d", "keys": keys, "items": [one(name, v[k]) for k in keys]}
        if hasattr(v, "asnumpy"):
            try:
                data = v.asnumpy()
            except Exception as e:
                return {"t": "e", "cls": error_class(mx, e)}
            ent = {"t": "a", "dtype": data.dtype.name, "shape": list(data.shape),
                   "stype": getattr(v, "stype", "default"), "v": data,
                   "np": type(v).__module__.split(".")[1:2] == ["numpy"]}
            if name in it.random:
                ent["random"] = True
            init = it.initial.get(name)
            if (init is not None and init.dtype == data.dtype and init.shape == data.shape
                    and np.array_equal(init, data, equal_nan=data.dtype.kind == "f")):
                ent["same"] = True
                del ent["v"]
            return ent
        return {"t": "o", "type": type(v).__name__}
    return {k: one(k, v) for k, v in it.env.items()}


def run_program(mx, prog, foreign=None, workdir=None):
    """Normalised results and saved files of one program."""
    if workdir is None:
        with tempfile.TemporaryDirectory(prefix="difftest") as tmp:
            return run_program(mx, prog, foreign, tmp)
    it = Interp(mx, prog, foreign, workdir)
    try:
        it.run()
    except Exception as e:  # a bug of the interpreter itself, kept as a result
        it.env["!interp"] = e
    return normalise(mx, it), it.files
