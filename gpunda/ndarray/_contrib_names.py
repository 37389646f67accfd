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
