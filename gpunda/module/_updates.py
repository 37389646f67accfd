"""Where a Module's parameters are updated: on the KVStore, or locally by an Updater.

MXNet's rules (``mx.model._create_kvstore`` and friends): a string kvstore with
one device and no 'dist' means no store at all; ``MXNET_UPDATE_ON_KVSTORE``
(default 1) puts the optimizer on the store, except for a 'local' store holding a
parameter over 16M elements. With the optimizer on the store the gradients are
pushed and the updated weights pulled; otherwise the store only sums gradients
and each device's Updater applies the optimizer, its state index being
``param_index * num_devices + device``.
"""
from __future__ import annotations

import os

import numpy as np

__all__ = ["create_kvstore", "initialize_kvstore", "update_params_on_kvstore", "update_params"]

_LOCAL_UPDATE_LIMIT = 1024 * 1024 * 16


def create_kvstore(kvstore, num_device, arg_params):
    """``(kvstore or None, update_on_kvstore)`` for a kvstore given as KVStore, str or None."""
    from gpunda import kvstore as kvs
    update_on_kvstore = bool(int(os.getenv("MXNET_UPDATE_ON_KVSTORE", "1")))
    if kvstore is None:
        kv = None
    elif isinstance(kvstore, kvs.KVStoreBase):
        kv = kvstore
    elif isinstance(kvstore, str):
        if num_device == 1 and "dist" not in kvstore:
            kv = None
        else:
            kv = kvs.create(kvstore)
            if kvstore == "local" and arg_params:
                largest = max(int(np.prod(p.shape, dtype=np.int64)) for p in arg_params.values())
                if largest > _LOCAL_UPDATE_LIMIT:
                    update_on_kvstore = False
    else:
        raise TypeError(f"kvstore must be KVStore, str or None, got {type(kvstore).__name__}")
    if kv is None:
        update_on_kvstore = False
    else:
        update_on_kvstore &= kv.is_capable(kvs.KVStoreBase.OPTIMIZER)
    return kv, update_on_kvstore


def initialize_kvstore(kvstore, param_arrays, arg_params, param_names, update_on_kvstore):
    """Put every parameter in the store (and, updating there, on every device)."""
    for idx, on_devices in enumerate(param_arrays):
        name = param_names[idx]
        if not update_on_kvstore or arg_params[name].stype != "default":
            kvstore.init(name, arg_params[name])
        else:
            kvstore.broadcast(name, arg_params[name], out=on_devices)


def update_params_on_kvstore(param_arrays, grad_arrays, kvstore, param_names):
    """Push each gradient to the store (which runs the optimizer) and pull the weights."""
    for index, (args, grads) in enumerate(zip(param_arrays, grad_arrays)):
        if grads[0] is None:
            continue
        name = param_names[index]
        if grads[0].stype == "default" and args[0].stype == "default":
            kvstore.pushpull(name, grads, out=args, priority=-index)
        else:
            kvstore.push(name, grads, priority=-index)
            kvstore.pull(name, out=args, priority=-index)


def update_params(param_arrays, grad_arrays, updater, num_device, kvstore=None,
                  param_names=None):
    """Sum the gradients over devices through ``kvstore`` (if any), then run ``updater``."""
    updates = [[] for _ in range(num_device)]
    for index, (args, grads) in enumerate(zip(param_arrays, grad_arrays)):
        if grads[0] is None:
            continue
        if kvstore:
            name = param_names[index]
            if grads[0].stype == "default" and args[0].stype == "default":
                kvstore.pushpull(name, grads, priority=-index)
            else:
                kvstore.push(name, grads, priority=-index)
                kvstore.pull(name, out=grads, priority=-index)
        for k, (w, g) in enumerate(zip(args, grads)):
            updates[k].append((index * num_device + k, g, w))
    for dev_updates in updates:
        if dev_updates:
            idx, grads, weights = zip(*dev_updates)
            updater(list(idx), list(grads), list(weights))
