"""IdentityAttachKLSparseReg (a layer MXNet defines by its backward) and
``_contrib_SyncBatchNorm`` on one device. (``_contrib_SparseEmbedding`` is in ops/nn/basic.py,
beside Embedding.)

- ``IdentityAttachKLSparseReg``: the forward is the identity; its backward adds the
  gradient of a KL sparseness penalty, ``penalty * (-rho / rho_hat + (1 - rho) /
  (1 - rho_hat))``, where ``rho_hat`` is the ``moving_avg`` aux state, which the
  backward first moves towards the batch's mean activation per unit
  (``moving_avg = momentum * moving_avg + (1 - momentum) * mean(data, axis=0)``).
  The gradient is therefore not the derivative of the forward, by MXNet's
  definition, and it writes ``moving_avg`` in place as MXNet's backward does.
"""
from __future__ import annotations

from gpunda.base import GpundaError
from gpunda.ops.registry import OpDef, Param, get_op, register
from gpunda.ops.nn import basic as _nn


def _kl_forward(xp, p, data, moving_avg):
    if data.ndim < 2:
        raise GpundaError(f"Operator IdentityAttachKLSparseReg: data must have at least 2 "
                          f"dimensions (batch, units, ...), got shape {tuple(data.shape)}")
    if tuple(moving_avg.shape) != (data.shape[1],):
        raise GpundaError(f"Operator IdentityAttachKLSparseReg: moving_avg has shape "
                          f"{tuple(moving_avg.shape)}; expected ({data.shape[1]},)")
    return data.copy()


def _write_in_place(dst, value):
    """Store ``value`` into the aux state ``dst`` (a raw array, or an NDArray when the
    backward is recorded) without recording the write: it is state, not a result."""
    raw = getattr(dst, "_data", dst)
    raw[...] = getattr(value, "_data", value)


def _kl_gradient(F, p, ins, outs, ograds):
    data, moving_avg = ins
    g = ograds[0]
    axes = tuple(a for a in range(data.ndim) if a != 1)
    avg = F.mean(F.BlockGrad(data), axis=axes)
    new_avg = moving_avg * p.momentum + avg * (1 - p.momentum)
    _write_in_place(moving_avg, new_avg)
    shape = (1, -1) + (1,) * (data.ndim - 2)
    rho_hat = F.reshape(F.BlockGrad(new_avg), shape=shape)
    t = p.sparseness_target
    penalty = (rho_hat ** -1) * (-t) + ((1 - rho_hat) ** -1) * (1 - t)
    return [F.broadcast_add(g, penalty * p.penalty), None]


def _kl_check(p):
    for name in ("sparseness_target", "momentum"):
        v = getattr(p, name)
        if not 0 <= v <= 1:
            raise GpundaError(f"Operator IdentityAttachKLSparseReg: parameter {name}={v} "
                              f"must be in [0, 1]")


register(OpDef(
    "IdentityAttachKLSparseReg", _kl_forward, inputs=("data", "moving_avg"),
    params=[Param("sparseness_target", "float", 0.1, "target mean activation rho"),
            Param("penalty", "float", 0.001, "weight of the KL penalty"),
            Param("momentum", "float", 0.9, "moving average decay of the mean activation")],
    check=_kl_check, aux_inputs=("moving_avg",), mutates=(1,), mutates_in="backward",
    no_grad_inputs=("moving_avg",),
    gradient=_kl_gradient, save=("inputs",), family="nn",
    infer_shape=lambda p, s: ([s[0], None if s[0] is None else (s[0][1],)],
                              None if s[0] is None else [tuple(s[0])]),
    doc="Identity whose backward adds a KL sparseness penalty on the mean activation and "
        "updates the moving_avg aux state (see gpunda/ops/contrib/misc.py)."))


# ---------------------------------------------------------------------------
# _contrib_SyncBatchNorm: BatchNorm over axis 1 whose statistics MXNet reduces across
# ``ndev`` devices by ``key``. One process holds one device's batch here, so the
# statistics are the batch's; the third output is the variance itself (MXNet's
# BatchNorm gives 1/sqrt(var + eps) there).

def _bn_params(p):
    return get_op("BatchNorm").parse_params(dict(
        eps=p.eps, momentum=p.momentum, fix_gamma=p.fix_gamma,
        use_global_stats=p.use_global_stats, output_mean_var=p.output_mean_var, axis=1))


def _sync_bn(xp, p, x, gamma, beta, mm, mv):
    if p.ndev != 1:
        # MXNet's kernel waits at a barrier keyed by ``key`` until all ndev devices' calls
        # arrive, which its asynchronous engine allows; gpunda runs each call as it is
        # made, so the first device's call could never see the others'
        raise GpundaError(f"Operator _contrib_SyncBatchNorm: ndev={p.ndev} is not supported: "
                          f"gpunda runs ops as they are called, so one device's call cannot "
                          f"wait for the other devices' statistics; use ndev=1 (one device "
                          f"per process, as gluon.contrib.nn.SyncBatchNorm does)")
    bp = _bn_params(p)
    training = _nn._bn_training(bp)
    out, mean, _ = _nn._batch_norm(xp, bp, x, gamma, beta, mm, mv, "_contrib_SyncBatchNorm")
    if training:
        red = tuple(i for i in range(x.ndim) if i != 1)
        xa = _nn._acc(x)
        var = ((xa - xa.mean(axis=red, keepdims=True)) ** 2).mean(axis=red)
    else:
        var = mv
    return out, mean, var.astype(mean.dtype)      # the parameters' dtype, as mean


def _sync_bn_update(xp, p, ins, outs):
    # MXNet's SyncBatchNorm backward: the moving stats from the saved mean and variance
    _nn.bn_update(xp, p, ins, outs, var_is_invstd=False)


def _sync_bn_gradient(F, p, ins, outs, og):
    # BatchNorm's rule wants 1/sqrt(var + eps) as its third output; the mean/var outputs
    # pass no gradient, as in MXNet
    r = F.rsqrt(outs[2] + p.eps)
    return _nn._grad_batch_norm(F, _bn_params(p), ins, [outs[0], outs[1], r], og)


register(OpDef(
    "_contrib_SyncBatchNorm", _sync_bn,
    inputs=("data", "gamma", "beta", "moving_mean", "moving_var"),
    params=_nn.BN_COMMON_PARAMS + [
        Param("ndev", "int", 1),
        Param("key", "str", doc="the name shared by the synchronised copies")],
    num_outputs=3, num_visible=lambda p: 3 if p.output_mean_var else 1,
    aux_inputs=("moving_mean", "moving_var"), mutates=(3, 4), mutates_in="backward",
    update=_sync_bn_update, output_names=("output", "mean", "var"), gradient=_sync_bn_gradient,
    save=("inputs", "outputs"), infer_shape=get_op("BatchNorm").infer_shape,
    infer_type=_nn.bn_infer_type("_contrib_SyncBatchNorm", ints=True), family="nn",
    doc="BatchNorm over axis 1 (statistics of this device's batch, ndev=1); the third "
        "output is the batch variance."))
