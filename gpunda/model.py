"""MXNet's ``mx.model`` checkpoint helpers: ``prefix-symbol.json`` + ``prefix-EPOCH.params``.

The ``.params`` file is an NDArray dict file whose keys are ``arg:<name>``
(trainable parameters) and ``aux:<name>`` (auxiliary states such as BatchNorm's
running mean/var), exactly as written by MXNet 1.x's ``save_checkpoint`` and
``HybridBlock.export``.
"""
from __future__ import annotations

import os

from gpunda.base import GpundaError

__all__ = ["save_checkpoint", "load_checkpoint", "load_params", "params_path", "symbol_path"]


def symbol_path(prefix):
    """The symbol file of a checkpoint: ``prefix-symbol.json``."""
    return f"{prefix}-symbol.json"


def params_path(prefix, epoch):
    """The parameter file of a checkpoint: ``prefix-%04d.params``."""
    if isinstance(epoch, bool) or not isinstance(epoch, int) or epoch < 0:
        raise GpundaError(f"checkpoint: epoch={epoch!r} must be an integer >= 0")
    return f"{prefix}-{epoch:04d}.params"


def _split_params(save_dict, fname):
    arg_params, aux_params = {}, {}
    for key, value in save_dict.items():
        kind, sep, name = key.partition(":")
        if not sep or kind not in ("arg", "aux"):
            raise GpundaError(
                f"load_params: key {key!r} in {fname!r} has no 'arg:'/'aux:' prefix; this is not "
                f"a checkpoint .params file (files from Block.save_parameters load with "
                f"Block.load_parameters)")
        (arg_params if kind == "arg" else aux_params)[name] = value
    return arg_params, aux_params


def load_params(prefix, epoch, ctx=None):
    """Load ``prefix-EPOCH.params``.

    Returns:
        ``(arg_params, aux_params)``: dicts name -> NDArray with the ``arg:``/``aux:``
        prefixes removed, on ``ctx`` (default cpu).
    """
    from gpunda.ndarray import load
    fname = params_path(prefix, epoch)
    save_dict = load(fname, ctx=ctx)
    if not isinstance(save_dict, dict):
        if not save_dict:      # an empty dict is saved with no names and reads back as []
            return {}, {}
        raise GpundaError(f"load_params: {fname!r} holds an unnamed list of arrays, not a "
                          f"checkpoint dict")
    return _split_params(save_dict, fname)


def load_checkpoint(prefix, epoch):
    """Load a checkpoint written by ``mx.model.save_checkpoint`` or ``HybridBlock.export``.

    Returns:
        ``(symbol, arg_params, aux_params)``.

    Example:
        >>> sym, args, auxs = mx.model.load_checkpoint('resnet', 0)
    """
    from gpunda import symbol as _sym
    symbol = _sym.load(symbol_path(prefix))
    arg_params, aux_params = load_params(prefix, epoch)
    return symbol, arg_params, aux_params


def save_checkpoint(prefix, epoch, symbol, arg_params, aux_params, remove_amp_cast=True):
    """Write ``prefix-symbol.json`` (unless ``symbol`` is None) and ``prefix-EPOCH.params``.

    Args:
        arg_params, aux_params: dicts name -> NDArray; saved as ``arg:<name>`` and
            ``aux:<name>`` in that order. Each file is replaced atomically.
        remove_amp_cast: passed to ``Symbol.save`` when it accepts it.
    """
    from gpunda.ndarray import NDArray, save
    fname = params_path(prefix, epoch)
    save_dict = {}
    for kind, params in (("arg", arg_params), ("aux", aux_params)):
        if params is None:
            continue
        if not isinstance(params, dict):
            raise GpundaError(f"save_checkpoint: {kind}_params must be a dict name -> NDArray, "
                              f"got {type(params).__name__}")
        for name, value in params.items():
            if not isinstance(value, NDArray):
                raise GpundaError(f"save_checkpoint: {kind}_params[{name!r}] is a "
                                  f"{type(value).__name__}, not an NDArray")
            save_dict[f"{kind}:{name}"] = value
    folder = os.path.dirname(os.path.abspath(fname))
    if not os.path.isdir(folder):
        raise GpundaError(f"save_checkpoint: the folder {folder!r} of prefix {prefix!r} does "
                          f"not exist; create it first (nothing was written)")
    if symbol is not None:
        _save_symbol(symbol, symbol_path(prefix), remove_amp_cast)
    save(fname, save_dict)


def _save_symbol(symbol, fname, remove_amp_cast):
    import inspect
    saver = getattr(symbol, "save", None)
    if saver is None:
        raise GpundaError(f"save_checkpoint: symbol is a {type(symbol).__name__}, not a Symbol")
    try:
        accepts = "remove_amp_cast" in inspect.signature(saver).parameters
    except (TypeError, ValueError):
        accepts = False
    if accepts:
        saver(fname, remove_amp_cast=remove_amp_cast)
    else:
        saver(fname)


# what batch-end callbacks receive from Module.fit/score (MXNet's namedtuple, its type name too)
from collections import namedtuple as _namedtuple  # noqa: E402

BatchEndParam = _namedtuple("BatchEndParams", ["epoch", "nbatch", "eval_metric", "locals"])
__all__.append("BatchEndParam")
