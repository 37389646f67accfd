"""Every ``xp.<name>`` / ``sp.<name>`` / ``special(xp).<name>`` an op body uses exists in
CuPy, with the keyword arguments used (read from the installed cupy; no GPU needed).

An ast walk over gpunda/ops/*.py: ``xp`` is the array module, ``sp`` (or a name bound
from ``sp_of(...)``) the sparse module, ``special(xp)`` (or a name bound from it)
cupyx.scipy.special. Only code that runs on both backends may use these names, so a
NumPy-only helper there is a bug the GPU would hit first.
"""
import ast
import inspect
from pathlib import Path

import pytest

import gpunda

cupy = pytest.importorskip("cupy", reason="the check reads CuPy's installed namespaces")
from gpunda.backends import _standin_names as names  # noqa: E402

OPS = Path(gpunda.__file__).parent / "ops"
_BASES = {"xp": "cupy", "sp": "cupyx.scipy.sparse"}
_BINDERS = {"sp_of": "cupyx.scipy.sparse", "special": "cupyx.scipy.special"}


def _module_of(node, aliases):
    """The CuPy module a ``base`` expression names (``xp``, ``xp.linalg``, ``special(xp)``)."""
    if isinstance(node, ast.Name):
        return aliases.get(node.id, _BASES.get(node.id))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name):
        return _BINDERS.get(node.func.id)
    if isinstance(node, ast.Attribute):
        parent = _module_of(node.value, aliases)
        if parent is not None:
            obj = _resolve(parent)
            sub = getattr(obj, node.attr, None)
            if inspect.ismodule(sub):
                return f"{parent}.{node.attr}"
    return None


def _resolve(modname):
    import importlib
    return importlib.import_module(modname)


def _uses(path):
    """(line, module, name, call node or None, ufunc method or None) for each use."""
    tree = ast.parse(path.read_text())
    aliases = {}
    for node in ast.walk(tree):
        # sps = special(xp); sp = sp_of(xp)
        if isinstance(node, ast.Assign) and len(node.targets) == 1 and \
                isinstance(node.targets[0], ast.Name):
            m = _module_of(node.value, {}) if isinstance(node.value, ast.Call) else None
            if m is not None:
                aliases[node.targets[0].id] = m
    calls = {id(n.func): n for n in ast.walk(tree) if isinstance(n, ast.Call)}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or node.attr.startswith("__"):
            continue
        mod = _module_of(node.value, aliases)
        if mod is not None:
            if inspect.ismodule(getattr(_resolve(mod), node.attr, None)):
                continue
            yield node.lineno, mod, node.attr, calls.get(id(node)), None
        elif isinstance(node.value, ast.Attribute):
            # xp.add.at(...): a ufunc method
            mod = _module_of(node.value.value, aliases)
            if mod == "cupy":
                yield node.lineno, mod, node.value.attr, calls.get(id(node)), node.attr


def _problems():
    out = []
    for path in sorted(OPS.glob("*.py")):
        for line, mod, name, call, meth in _uses(path):
            where = f"ops/{path.name}:{line} {mod}.{name}{'.' + meth if meth else ''}"
            spec = names.spec_of(mod, name)
            if spec is None:
                out.append(f"{where}: CuPy {cupy.__version__} has no {mod}.{name}")
                continue
            kw = [k.arg for k in call.keywords if k.arg] if call is not None else []
            if meth is not None:
                if spec.kind != "ufunc":
                    continue
                mspec = names.ufunc_methods().get(meth)
                if mspec is None:
                    out.append(f"{where}: CuPy ufuncs have no .{meth}")
                    continue
                if meth == "at" and getattr(spec.obj, "_scatter_op", None) is None:
                    out.append(f"{where}: CuPy has no {name}.at (only add, subtract, maximum, "
                               f"minimum and bitwise ufuncs scatter)")
                    continue
                spec = mspec
            if spec.kind == "ufunc":
                bad = [k for k in kw if k not in names.UFUNC_KWARGS]
                if bad:
                    out.append(f"{where}: CuPy ufuncs take no {bad}")
                continue
            try:
                spec.check_kwargs(dict.fromkeys(kw), f"{mod}.{name}")
            except TypeError as e:
                out.append(f"{where}: {e}")
    return out


def test_op_bodies_use_only_cupy_names_and_keywords():
    problems = _problems()
    assert not problems, "\n".join(problems)


def test_the_walk_finds_uses_and_flags_what_cupy_lacks(tmp_path):
    # a fake ops directory: the check must report each of these, and only these
    (tmp_path / "bad.py").write_text(
        "def f(xp, a):\n"
        "    sps = special(xp)\n"
        "    sp = sp_of(xp)\n"
        "    xp.sum(a, where=a > 0)\n"          # kwarg CuPy lacks
        "    xp.no_such_function(a)\n"          # name CuPy lacks
        "    xp.multiply.at(a, [0], 2)\n"       # ufunc.at CuPy lacks
        "    xp.add(a, 1, order='C')\n"         # ufunc kwarg CuPy lacks
        "    sps.erf(a); sps.not_special(a)\n"  # special function cupyx lacks
        "    sp.lil_matrix(a)\n"                # sparse format cupyx lacks
        "    xp.linalg.inv(a); xp.add.at(a, [0], 1); xp.sum(a, axis=0)\n")
    globals()["OPS"], old = tmp_path, OPS
    try:
        got = _problems()
    finally:
        globals()["OPS"] = old
    text = "\n".join(got)
    assert len(got) == 6, text
    for needle in ("'where'", "no_such_function", "multiply.at", "['order']", "not_special",
                   "lil_matrix"):
        assert needle in text, (needle, text)
