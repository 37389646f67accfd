"""``Block.save`` / ``Block.load``: MXNet 1.9.1's structure-based model files.

``<prefix>-model.json`` is a nested dict, one entry per block, keyed by the
block's class name (lower case) plus its position in a depth-first walk of the
children (``myblock0``, ``dense1`` ...). Each entry holds the block's name when
saved (``orig_name``), a map from each child's name to the attribute name the
parent used for it (``children``), and for a HybridBlock whether it had a
cached graph (``hybridized``) and then that graph: the input symbols
(``inputs``), the output symbol (``symbol``) and the input/output formats.
``<prefix>-model.params`` is ``save_parameters``' file.

``load`` does not rebuild the architecture: the caller creates the same model
in the same order, and ``load`` renames blocks and their parameter keys to the
saved names, restores the cached graphs (so the saved symbols find their
parameters) and loads the values.
"""
from __future__ import annotations

import json

from gpunda.base import GpundaError


def save_model(block, prefix):
    """Write ``prefix-model.json`` (structure and cached graphs) and ``prefix-model.params``."""
    from gpunda.gluon.block import HybridBlock
    model = {}
    counter = [0]

    def visit(blk, parent_entry):
        entry = {"orig_name": blk.name}
        parent_entry[type(blk).__name__.lower() + str(counter[0])] = entry
        if isinstance(blk, HybridBlock):
            entry["hybridized"] = bool(blk._cached_graph)
            if blk._cached_graph:
                inputs, out = blk._cached_graph
                entry["in_format"] = blk._in_format
                entry["out_format"] = blk._out_format
                entry["inputs"] = [s.tojson() for s in inputs]
                entry["symbol"] = out.tojson()
        children = {}
        entry["children"] = children
        for attr, child in blk._children.items():
            counter[0] += 1
            children[child.name] = attr
            visit(child, entry)

    visit(block, model)
    with open(prefix + "-model.json", "w") as f:
        json.dump(model, f)
    block.save_parameters(prefix + "-model.params")


def load_model(block, prefix):
    """Restore names, cached graphs and parameter values saved by ``save_model``."""
    from gpunda.gluon.block import HybridBlock
    from gpunda.symbol import load_json
    with open(prefix + "-model.json") as f:
        model = json.load(f)
    counter = [0]

    def visit(blk, parent_entry):
        key = type(blk).__name__.lower() + str(counter[0])
        if key not in parent_entry:
            raise GpundaError(f"Block.load({prefix!r}): the model has a {type(blk).__name__} "
                              f"(block {blk.name}) at position {counter[0]}, but the saved "
                              f"structure has none there ({sorted(k for k in parent_entry if k not in _FIELDS)}); "
                              f"create the model exactly as when it was saved")
        entry = parent_entry[key]
        blk._name = entry["orig_name"]
        if isinstance(blk, HybridBlock) and entry.get("hybridized"):
            blk._clear_cached_op()
            blk._in_format = entry["in_format"]
            blk._out_format = entry["out_format"]
            blk._cached_graph = ([load_json(s) for s in entry["inputs"]],
                                 load_json(entry["symbol"]))
            blk._active = True
        # the saved graph names parameters by the saved block name
        pd = blk.params
        old_prefix = pd.prefix
        renamed = [(blk.name + "_" + k[len(old_prefix):], p) for k, p in pd._params.items()]
        pd._params.clear()
        pd._params.update(renamed)
        for child in blk._children.values():
            counter[0] += 1
            visit(child, entry)
        saved_children = entry["children"]
        current = list(blk._children.values())
        blk._children.clear()
        for child in current:
            if child.name not in saved_children:
                raise GpundaError(f"Block.load({prefix!r}): block {blk.name} has a child "
                                  f"{child.name} that the saved model does not have "
                                  f"(saved: {sorted(saved_children)})")
            blk._children[saved_children[child.name]] = child

    visit(block, model)
    block.load_parameters(prefix + "-model.params")


_FIELDS = ("orig_name", "hybridized", "in_format", "out_format", "inputs", "symbol", "children")
