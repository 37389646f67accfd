"""gpunda's layers import downward only (docs/architecture.md).

Every import in the package is read from the source (``ast``, imports inside
functions included) and each module is given its layer by the table below, the
longest matching prefix winning. An import of a higher layer fails the test, naming
the file, the line and both layers. ``python tests/test_import_layers.py`` prints the
report: upward imports, the import cycles that remain inside a layer, and the
lines of code per layer.
"""
from __future__ import annotations

import ast
import collections
import os
import sys

import pytest

PACKAGE_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "gpunda")

LAYERS = ("base", "devices", "ops", "engine", "front ends", "libraries", "tools")

# module prefix -> layer; anything else under gpunda is a library module
LAYER_OF_PREFIX = {
    "gpunda.base": "base", "gpunda.error": "base", "gpunda.log": "base", "gpunda.name": "base",
    "gpunda.attribute": "base", "gpunda.libinfo": "base", "gpunda.registry": "base",
    "gpunda._core": "base",
    "gpunda.context": "devices", "gpunda.backends": "devices", "gpunda.util": "devices",
    "gpunda.ops": "ops",
    "gpunda._engine": "engine", "gpunda.engine": "engine",
    "gpunda.ndarray": "front ends", "gpunda.symbol": "front ends", "gpunda.numpy": "front ends",
    "gpunda.numpy_extension": "front ends", "gpunda.autograd": "front ends",
    "gpunda.random": "front ends", "gpunda.executor": "front ends",
    "gpunda.operator": "front ends", "gpunda._frontend": "front ends",
    "gpunda._numpy_op_doc": "front ends", "gpunda.numpy_op_signature": "front ends",
    "gpunda": "tools", "gpunda.__main__": "tools", "gpunda._tools": "tools",
}


def layer_of(module):
    """The layer of dotted ``module`` name (longest matching prefix of the table)."""
    best = None
    for prefix in LAYER_OF_PREFIX:
        if module == prefix or module.startswith(prefix + "."):
            if best is None or len(prefix) > len(best):
                best = prefix
    if best == "gpunda" and module != "gpunda":
        return "libraries"
    return LAYER_OF_PREFIX[best]


def _modules():
    root = os.path.dirname(PACKAGE_DIR)
    found = {}
    for folder, _, files in os.walk(PACKAGE_DIR):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                dotted = os.path.relpath(path, root)[:-3].replace(os.sep, ".")
                found[dotted[:-len(".__init__")] if dotted.endswith(".__init__") else dotted] = path
    return found


def import_edges():
    """(importer, imported module, line) for every gpunda import in the package."""
    modules = _modules()

    def resolve(name):
        while name and name not in modules:
            name = name.rpartition(".")[0]
        return name

    edges = []
    for module, path in modules.items():
        with open(path, encoding="utf-8") as f:
            tree = ast.parse(f.read(), path)
        package = module if path.endswith("__init__.py") else module.rpartition(".")[0]
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base
                           for a in node.names]
            else:
                continue
            for target in targets:
                if target == "gpunda" or target.startswith("gpunda."):
                    edges.append((module, resolve(target), node.lineno))
    return edges, modules


def upward_imports():
    edges, modules = import_edges()
    rank = {name: i for i, name in enumerate(LAYERS)}
    return [(a, b, line) for a, b, line in edges
            if rank[layer_of(b)] > rank[layer_of(a)]]


def cycles():
    """Import cycles (strongly connected groups of two or more modules), largest first."""
    edges, modules = import_edges()
    graph = collections.defaultdict(set)
    for a, b, _ in edges:
        if a != b and not b.startswith(a + "."):     # a package importing its own submodule
            graph[a].add(b)
    index, low, stack, on_stack, groups = {}, {}, [], set(), []
    counter = [0]
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10000))

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                groups.append(sorted(group))

    for v in sorted(modules):
        if v not in index:
            visit(v)
    return sorted(groups, key=len, reverse=True)


def test_no_module_imports_a_higher_layer():
    bad = [f"{a}:{line} ({layer_of(a)}) imports {b} ({layer_of(b)})"
           for a, b, line in upward_imports()]
    assert not bad, "upward imports (see docs/architecture.md):\n" + "\n".join(bad)


def test_no_cycle_crosses_layers():
    # cycles inside one layer are allowed (e.g. ndarray <-> symbol helpers); across layers
    # they would be upward imports
    crossing = [g for g in cycles() if len({layer_of(m) for m in g}) > 1]
    assert not crossing, crossing


def test_layer_table_catches_an_upward_import(tmp_path, monkeypatch):
    # the check itself: an ops module importing the engine is reported
    pkg = tmp_path / "gpunda"
    (pkg / "ops").mkdir(parents=True)
    (pkg / "_engine").mkdir()
    for p in (pkg / "__init__.py", pkg / "ops" / "__init__.py", pkg / "_engine" / "__init__.py"):
        p.write_text("")
    (pkg / "_engine" / "imperative.py").write_text("")
    (pkg / "ops" / "bad.py").write_text("def f():\n    from gpunda._engine import imperative\n")
    monkeypatch.setattr(sys.modules[__name__], "PACKAGE_DIR", str(pkg))
    assert upward_imports() == [("gpunda.ops.bad", "gpunda._engine.imperative", 2)]


@pytest.mark.parametrize("module, layer", [
    ("gpunda._core.hooks", "base"), ("gpunda.backends.generators", "devices"),
    ("gpunda.ops.nn.conv", "ops"), ("gpunda._engine.cached_op", "engine"),
    ("gpunda.autograd", "front ends"), ("gpunda.gluon.block", "libraries"),
    ("gpunda._tools.alias", "tools")])
def test_layer_of(module, layer):
    assert layer_of(module) == layer


def report():
    """Upward imports, cycles and lines of code per layer, as text."""
    edges, modules = import_edges()
    lines = collections.Counter()
    for module, path in modules.items():
        with open(path, encoding="utf-8") as f:
            lines[layer_of(module)] += sum(1 for _ in f)
    out = [f"upward imports: {len(upward_imports())}"]
    out += [f"  {a}:{line} -> {b}" for a, b, line in upward_imports()]
    groups = cycles()
    out.append(f"import cycles: {len(groups)} (all inside one layer)")
    out += [f"  {len(g)} modules: {', '.join(g)}" for g in groups]
    out.append("lines per layer:")
    out += [f"  {name:11s} {lines[name]:6d}" for name in LAYERS]
    return "\n".join(out)


if __name__ == "__main__":
    print(report())
