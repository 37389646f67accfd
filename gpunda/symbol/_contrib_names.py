"""``mx.sym.contrib`` functions written in Python in MXNet (``adamw_update``,
``mp_adamw_update``) and the names its module re-exports (``Symbol``, ``symbol``,
``AttrScope``, ``check_call``, ``uniform``)."""
from __future__ import annotations


def _rescale_symbol(rescale_grad):
    from gpunda.symbol import Symbol, full
    if isinstance(rescale_grad, Symbol):
        return rescale_grad
    return full(shape=(1,), val=rescale_grad)


def adamw_update(weight, grad, mean, var, rescale_grad, lr, eta, beta1=0.9, beta2=0.999,
                 epsilon=1e-8, wd=0, clip_gradient=-1, out=None, name=None, **kwargs):
    """AdamW step node (``_adamw_update``); a Python ``rescale_grad`` becomes a (1,)
    constant, as MXNet's."""
    from gpunda.symbol import _internal
    return _internal._adamw_update(weight, grad, mean, var, _rescale_symbol(rescale_grad),
                                   lr=lr, eta=eta, beta1=beta1, beta2=beta2, epsilon=epsilon,
                                   wd=wd, clip_gradient=clip_gradient, out=out, name=name,
                                   **kwargs)


def mp_adamw_update(weight, grad, mean, var, weight32, rescale_grad, lr, eta, beta1=0.9,
                    beta2=0.999, epsilon=1e-8, wd=0, clip_gradient=-1, out=None, name=None,
                    **kwargs):
    """AdamW step node on the float32 master copy ``weight32`` (``_mp_adamw_update``)."""
    from gpunda.symbol import _internal
    return _internal._mp_adamw_update(weight, grad, mean, var, weight32,
                                      _rescale_symbol(rescale_grad), lr=lr, eta=eta,
                                      beta1=beta1, beta2=beta2, epsilon=epsilon, wd=wd,
                                      clip_gradient=clip_gradient, out=out, name=name,
                                      **kwargs)


def extend(contrib, symbol_module):
    """Add the functions above and the re-exported names to ``sym.contrib``."""
    from gpunda.attribute import AttrScope
    from gpunda.base import check_call
    from gpunda.symbol import random
    contrib.adamw_update = adamw_update
    contrib.mp_adamw_update = mp_adamw_update
    contrib.Symbol = symbol_module.Symbol
    contrib.symbol = symbol_module
    contrib.AttrScope = AttrScope
    contrib.check_call = check_call
    contrib.uniform = random.uniform
