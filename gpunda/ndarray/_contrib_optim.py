"""``nd.contrib`` front ends of MXNet's AdamW and multi-tensor LAMB ops: they take
lists of weights and states, interleave them per tensor and pass a Python
``rescale_grad`` as the one-element array the ops read (ops/optimizer/lamb_adamw.py)."""
from __future__ import annotations


def _nd():
    from gpunda import ndarray
    return ndarray


def _get_rescale_grad(rescale_grad, ctx=None):
    """``rescale_grad`` as the one-element array the optimizer ops read, on ``ctx`` (the
    CPU by default): a number fills a new array, an NDArray is moved there."""
    nd = _nd()
    if ctx is None:
        from gpunda.context import cpu
        ctx = cpu()
    if isinstance(rescale_grad, nd.NDArray):
        return rescale_grad.as_in_context(ctx)
    return nd.full(shape=(1,), val=rescale_grad, ctx=ctx)


def _interleave(*lists):
    return [x for group in zip(*lists) for x in group]


def adamw_update(weight, grad, mean, var, rescale_grad, lr, eta, beta1=0.9, beta2=0.999,
                 epsilon=1e-8, wd=0, clip_gradient=-1, out=None, name=None, **kwargs):
    """AdamW step (``_adamw_update``); mean and var are updated in place."""
    return _nd()._internal._adamw_update(
        weight, grad, mean, var, _get_rescale_grad(rescale_grad, weight.context), lr=lr, eta=eta,
        beta1=beta1, beta2=beta2, epsilon=epsilon, wd=wd, clip_gradient=clip_gradient,
        out=out, name=name, **kwargs)


def mp_adamw_update(weight, grad, mean, var, weight32, rescale_grad, lr, eta, beta1=0.9,
                    beta2=0.999, epsilon=1e-8, wd=0, clip_gradient=-1, out=None, name=None,
                    **kwargs):
    """AdamW step on the float32 master copy ``weight32`` (``_mp_adamw_update``)."""
    return _nd()._internal._mp_adamw_update(
        weight, grad, mean, var, weight32, _get_rescale_grad(rescale_grad, weight.context),
        lr=lr, eta=eta, beta1=beta1, beta2=beta2, epsilon=epsilon, wd=wd,
        clip_gradient=clip_gradient, out=out, name=name, **kwargs)


def multi_adamw_update(weights, grads, mean, var, rescale_grad, lrs, wds, etas, out=None,
                       name=None, size=0, **kwargs):
    """AdamW on lists of tensors (``_multi_adamw_update``)."""
    args = _interleave(weights, grads, mean, var) + [
        _get_rescale_grad(rescale_grad, weights[0].context)]
    return _nd()._internal._multi_adamw_update(*args, out=out, num_weights=size or len(weights),
                                               lrs=lrs, wds=wds, etas=etas, name=name, **kwargs)


def multi_mp_adamw_update(weights, grads, mean, var, weights32, rescale_grad, lrs, wds, etas,
                          out=None, name=None, size=0, **kwargs):
    """Mixed-precision AdamW on lists of tensors (``_multi_mp_adamw_update``)."""
    args = _interleave(weights, grads, mean, var, weights32) + [
        _get_rescale_grad(rescale_grad, weights[0].context)]
    return _nd()._internal._multi_mp_adamw_update(
        *args, out=out, num_weights=size or len(weights), lrs=lrs, wds=wds, etas=etas,
        name=name, **kwargs)


def multi_lamb_update(weights, grads, mean, var, step_count, lrs, wds, out=None,
                      num_tensors=0, **kwargs):
    """LAMB on lists of tensors (``_multi_lamb_update``)."""
    return _nd()._internal._multi_lamb_update(
        *_interleave(weights, grads, mean, var), out=out,
        num_tensors=num_tensors or len(weights), step_count=step_count,
        learning_rates=lrs, wds=wds, **kwargs)


def multi_mp_lamb_update(weights, grads, mean, var, weights32, step_count, lrs, wds,
                         out=None, num_tensors=0, **kwargs):
    """Mixed-precision LAMB on lists of tensors (``_multi_mp_lamb_update``)."""
    return _nd()._internal._multi_mp_lamb_update(
        *_interleave(weights, grads, mean, var, weights32), out=out,
        num_tensors=num_tensors or len(weights), step_count=step_count,
        learning_rates=lrs, wds=wds, **kwargs)


def extend(contrib):
    """Add the functions above to the ``nd.contrib`` module object."""
    for fn in (adamw_update, mp_adamw_update, multi_adamw_update, multi_mp_adamw_update,
               multi_lamb_update, multi_mp_lamb_update):
        setattr(contrib, fn.__name__, fn)
