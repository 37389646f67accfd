"""MXNet's rules for operator-name prefixes (``mx.base``'s private helpers): which prefix puts
an op into which generated submodule (``_contrib_`` -> ``contrib``, ``_npi_`` -> ``np._internal``,
...). Code that walks MXNet's op names (AMP's wrappers, op-module generators) reads them."""
from __future__ import annotations

# legacy ops: prefix -> submodule of mx.nd / mx.sym
_OP_NAME_PREFIX_LIST = ["_contrib_", "_linalg_", "_sparse_", "_image_", "_random_"]
# NumPy front end: mx.np ops, mx.npx ops, their internal ops
_NP_OP_PREFIX = "_np_"
_NP_OP_SUBMODULE_LIST = ["_random_", "_linalg_"]
_NP_EXT_OP_PREFIX = "_npx_"
_NP_EXT_OP_SUBMODULE_LIST = ["_image_", "_random_"]
_NP_INTERNAL_OP_PREFIX = "_npi_"
# NumPy ops whose generated function returns a list even for one output
_NP_OUTPUT_IS_LIST_OPERATORS = {"_npi_split", "_npi_hsplit"}


def _get_op_name_prefix(op_name):
    """The first prefix of ``_OP_NAME_PREFIX_LIST`` that ``op_name`` starts with, else ''."""
    return next((p for p in _OP_NAME_PREFIX_LIST if op_name.startswith(p)), "")


def _is_np_op(op_name):
    """Whether ``op_name`` belongs to the NumPy front end (``_np_``, ``_npx_``, ``_npi_``)."""
    return op_name.startswith((_NP_OP_PREFIX, _NP_EXT_OP_PREFIX, _NP_INTERNAL_OP_PREFIX))


def _output_is_list(op_name):
    """Whether the generated function of ``op_name`` returns a list."""
    return _is_np_op(op_name) and op_name in _NP_OUTPUT_IS_LIST_OPERATORS


def _get_op_submodule_name(op_name, op_name_prefix, submodule_name_list):
    """The entry of ``submodule_name_list`` that ``op_name`` continues with after
    ``op_name_prefix`` (``'_random_'`` for ``_np_random_x``), else ''."""
    if not op_name.startswith(op_name_prefix):
        from gpunda.base import GpundaAssertionError
        raise GpundaAssertionError(f"_get_op_submodule_name: {op_name!r} does not start with "
                                   f"{op_name_prefix!r}")
    rest = op_name[len(op_name_prefix):]
    return next((s for s in submodule_name_list if rest.startswith(s)), "")


def _valid_error_name(name):
    """Whether ``name`` can name an error class (letters, digits, '_' and '.')."""
    return all(c.isalnum() or c in "_." for c in name)


def _find_error_type(line):
    """The error class name that starts the first line of a C-style error message
    ("ValueError: ..."), else None."""
    end = line.find(":")
    if end == -1:
        return None
    name = line[:end]
    return name if _valid_error_name(name) else None
