"""Names MXNet's ``mx.nd.contrib`` module exposes because its source imports them
(``mx``, ``ndarray``, ``current_context``, ``uniform``): user code reaches them there."""
from __future__ import annotations

import sys


def extend(contrib):
    """Add the re-exported names to the ``nd.contrib`` module object."""
    from gpunda import random
    from gpunda.context import current_context
    from gpunda.ndarray import ndarray
    contrib.mx = sys.modules[__name__.split(".")[0]]
    contrib.ndarray = ndarray
    contrib.current_context = current_context
    contrib.uniform = random.uniform
    # the private helpers of MXNet's module, which user code reaches there too
    from gpunda.ndarray._contrib_optim import _get_rescale_grad
    from gpunda.ndarray.control_flow import _flatten
    from gpunda._core.nesting import regroup
    contrib._flatten = _flatten
    contrib._regroup = regroup
    contrib._flatten_list = _flatten_list
    contrib._get_rescale_grad = _get_rescale_grad


def _flatten_list(nested_list):
    """The items of a list of lists, in order, in one list."""
    return [item for sub in nested_list for item in sub]
