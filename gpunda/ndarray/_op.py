"""Every registered op as a function on NDArrays (filled in by ``register.populate``).

``gpunda.ndarray`` re-exports the public ones; internal ones (``_plus_scalar``)
stay here and in ``nd._internal``.
"""
