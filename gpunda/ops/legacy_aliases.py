"""MXNet's older spellings of registered ops (its ``.add_alias`` names), so that
``nd._internal._Plus``, a Symbol JSON file naming ``_Greater`` and ``nd.cumsum`` find the
op they always meant."""
from __future__ import annotations

from gpunda.ops.registry import _REGISTRY, add_alias

_ALIASES = {
    "_Plus": "elemwise_add", "_Minus": "elemwise_sub", "_Mul": "elemwise_mul",
    "_Div": "elemwise_div", "_Mod": "_mod", "_Hypot": "_hypot",
    "_Equal": "_equal", "_Not_Equal": "_not_equal", "_Greater": "_greater",
    "_Greater_Equal": "_greater_equal", "_Lesser": "_lesser", "_Lesser_Equal": "_lesser_equal",
    "_Logical_And": "_logical_and", "_Logical_Or": "_logical_or", "_Logical_Xor": "_logical_xor",
    "_EqualScalar": "_equal_scalar", "_NotEqualScalar": "_not_equal_scalar",
    "_GreaterScalar": "_greater_scalar", "_GreaterEqualScalar": "_greater_equal_scalar",
    "_LesserScalar": "_lesser_scalar", "_LesserEqualScalar": "_lesser_equal_scalar",
    "_LogicalAndScalar": "_logical_and_scalar", "_LogicalOrScalar": "_logical_or_scalar",
    "_LogicalXorScalar": "_logical_xor_scalar",
    "cumsum": "_np_cumsum",
}

for _name, _target in _ALIASES.items():
    if _target in _REGISTRY and _name not in _REGISTRY:
        add_alias(_name, _target)
del _name, _target
