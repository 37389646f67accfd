"""The scalar expression language of pointwise records and the kernel IR built from it.

NOTE [Fusion IR]
A fused group becomes a ``Program``: a list of single-assignment instructions over
per-element values, each in a compute type ("float" or "double"; float16 data is
computed in float, as MXNet's fused kernels did). Instructions are hash-consed, so a
subexpression a group's ops repeat (``data > 0`` in a rule and its op) is one value.
The same Program is printed as CUDA C (codegen.py) and evaluated with NumPy
(reference.py): the CPU tests and the test stand-in GPU run the very expression the
kernel computes. Row reductions ("rsum", "rmax", "rmean" of one value, over the last axis
of the group's iteration shape, the result broadcast along that row: softmax's and
LayerNorm's statistics) make the Program a *row program*: its kernel runs a block per
row, one pass over the row per reduction and a last pass for the outputs (NOTE [Fusion
kernels]); every other instruction is per element. Expressions come only from the
ops' ``Pointwise`` records (NOTE [Pointwise records] in ops/registry.py); a parameter
name is replaced by its value.
"""
from __future__ import annotations

import ast

import numpy as np

from gpunda.base import GpundaError

__all__ = ["Program", "parse", "ctype_of", "FUNCS", "ROW_FUNCS"]

# function name -> number of arguments (the language's whole library)
FUNCS = {"exp": 1, "log": 1, "log1p": 1, "expm1": 1, "sqrt": 1, "rsqrt": 1, "tanh": 1,
         "sigmoid": 1, "erf": 1, "abs": 1, "sign": 1, "floor": 1, "sin": 1, "cos": 1,
         "max": 2, "min": 2, "pow": 2, "where": 3, "rsum": 1, "rmax": 1, "rmean": 1}
# the row reductions (NOTE [Fusion IR]): each is an instruction kind of its own
ROW_FUNCS = ("rsum", "rmax", "rmean")
_BIN = {ast.Add: "add", ast.Sub: "sub", ast.Mult: "mul", ast.Div: "div"}
_CMP = {ast.Gt: ">", ast.GtE: ">=", ast.Lt: "<", ast.LtE: "<=", ast.Eq: "==", ast.NotEq: "!="}
_parsed = {}


def ctype_of(dtype):
    """The compute type of a float dtype: "double" for float64, else "float"."""
    return "double" if np.dtype(dtype) == np.float64 else "float"


def parse(src):
    """The tree of expression ``src`` (cached): ("num", v) | ("name", n) | ("neg", a) |
    (binop, a, b) | ("cmp", op, a, b) | ("call", f, args)."""
    t = _parsed.get(src)
    if t is None:
        try:
            node = ast.parse(src, mode="eval").body
        except SyntaxError as e:
            raise GpundaError(f"pointwise expression {src!r}: {e}") from None
        t = _parsed[src] = _tree(node, src)
    return t


def _tree(n, src):
    if isinstance(n, ast.Constant) and isinstance(n.value, (int, float)) \
            and not isinstance(n.value, bool):
        return ("num", float(n.value))
    if isinstance(n, ast.Name):
        return ("name", n.id)
    if isinstance(n, ast.UnaryOp) and isinstance(n.op, (ast.USub, ast.UAdd)):
        a = _tree(n.operand, src)
        return a if isinstance(n.op, ast.UAdd) else ("neg", a)
    if isinstance(n, ast.BinOp) and type(n.op) in _BIN:
        return (_BIN[type(n.op)], _tree(n.left, src), _tree(n.right, src))
    if isinstance(n, ast.Compare) and len(n.ops) == 1 and type(n.ops[0]) in _CMP:
        return ("cmp", _CMP[type(n.ops[0])], _tree(n.left, src), _tree(n.comparators[0], src))
    if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id in FUNCS \
            and not n.keywords and len(n.args) == FUNCS[n.func.id]:
        return ("call", n.func.id, tuple(_tree(a, src) for a in n.args))
    raise GpundaError(f"pointwise expression {src!r}: {ast.dump(n)[:60]} is outside the "
                      f"expression language (NOTE [Pointwise records])")


class Program:
    """Single-assignment instructions (NOTE [Fusion IR]).

    ``instrs[k] = (kind, args, ctype)`` with kinds: "load" (args: input index),
    "const" (value), "neg", "add", "sub", "mul", "div" (value ids), "cmp" (op, a, b),
    "call" (function, value ids), "conv" (a value in another compute type), "round16"
    (a float value rounded through float16), "rsum"/"rmax"/"rmean" (a value id: its
    reduction along the row). ``outputs``: value ids stored, in order.
    """

    def __init__(self, in_ctypes):
        self.instrs = []
        self._memo = {}
        self.in_ctypes = list(in_ctypes)
        self.outputs = []
        self._loads = {}

    def add(self, kind, args, ct):
        key = (kind, args, ct)
        v = self._memo.get(key)
        if v is None:
            v = self._memo[key] = len(self.instrs)
            self.instrs.append(key)
        return v

    def load(self, k):
        return self.add("load", k, self.in_ctypes[k])

    def const(self, value, ct):
        return self.add("const", float(value), ct)

    def ct(self, v):
        return self.instrs[v][2]

    def convert(self, v, ct):
        """Value ``v`` in compute type ``ct``."""
        return v if self.ct(v) == ct else self.add("conv", v, ct)

    def emit(self, tree, env, params, ct):
        """The value of expression ``tree`` in compute type ``ct``: names from ``env``
        (name -> value id), else from ``params`` (a constant)."""
        kind = tree[0]
        if kind == "num":
            return self.const(tree[1], ct)
        if kind == "name":
            n = tree[1]
            if n in env:
                return self.convert(env[n], ct)
            v = getattr(params, n, None)
            if isinstance(v, (bool, int, float, np.integer, np.floating)):
                return self.const(float(v), ct)
            raise GpundaError(f"pointwise expression: name {n!r} is neither an input, out, "
                              f"g nor a numeric parameter")
        if kind == "neg":
            return self.add("neg", (self.emit(tree[1], env, params, ct),), ct)
        if kind == "cmp":
            return self.add("cmp", (tree[1], self.emit(tree[2], env, params, ct),
                                    self.emit(tree[3], env, params, ct)), ct)
        if kind == "call" and tree[1] in ROW_FUNCS:
            return self.add(tree[1], self.emit(tree[2][0], env, params, ct), ct)
        if kind == "call":
            return self.add("call", (tree[1],) + tuple(self.emit(a, env, params, ct)
                                                       for a in tree[2]), ct)
        return self.add(kind, (self.emit(tree[1], env, params, ct),
                               self.emit(tree[2], env, params, ct)), ct)

    def pruned(self):
        """A copy without the instructions no output reads (renumbered)."""
        live = set(self.outputs)
        for v in range(len(self.instrs) - 1, -1, -1):
            if v in live:
                kind, args, _ = self.instrs[v]
                if kind in ("conv", "round16") or kind in ROW_FUNCS:
                    live.add(args)
                elif kind == "cmp":
                    live.update(args[1:])
                elif kind == "call":
                    live.update(args[1:])
                elif kind not in ("load", "const"):
                    live.update(args)
        new = {}
        out = Program(self.in_ctypes)
        for v, (kind, args, ct) in enumerate(self.instrs):
            if v not in live:
                continue
            if kind in ("conv", "round16") or kind in ROW_FUNCS:
                args = new[args]
            elif kind in ("cmp", "call"):
                args = (args[0],) + tuple(new[a] for a in args[1:])
            elif kind not in ("load", "const"):
                args = tuple(new[a] for a in args)
            new[v] = out.add(kind, args, ct)
        out.outputs = [new[v] for v in self.outputs]
        return out

    @property
    def is_row(self):
        """Whether the Program reduces along rows (a row kernel)."""
        return any(k in ROW_FUNCS for k, _, _ in self.instrs)

    def accumulate(self, acc, v):
        """``acc + v`` (``v`` alone when ``acc`` is None)."""
        if acc is None:
            return v
        return self.add("add", (acc, self.convert(v, self.ct(acc))), self.ct(acc))
