"""Where a Module's parameters are updated: on the KVStore, or locally by an Updater.

MXNet's Module uses ``mx.model``'s helpers for this, and so does gpunda's: a string kvstore
with one device and no 'dist' means no store at all; ``MXNET_UPDATE_ON_KVSTORE`` (default 1)
puts the optimizer on the store, except for a 'local' store holding a parameter over 16M
elements. With the optimizer on the store the gradients are pushed and the updated weights
pulled; otherwise the store only sums gradients and each device's Updater applies the
optimizer, its state index being ``param_index * num_devices + device``.
"""
from __future__ import annotations

from gpunda.model import (_create_kvstore as create_kvstore,  # noqa: F401
                          _initialize_kvstore as initialize_kvstore,
                          _update_params_on_kvstore as update_params_on_kvstore,
                          _update_params as update_params)

__all__ = ["create_kvstore", "initialize_kvstore", "update_params_on_kvstore", "update_params"]
