"""Registry ops applied straight to backend arrays: the ``F`` a gradient rule gets on the
plain backward (nothing recorded), and that kernels test for (``isinstance(F, RawF)``) to
take a one-kernel route."""
from __future__ import annotations

from gpunda.base import GpundaError
from gpunda._core import deferred as _deferred
from gpunda.ops.registry import get_op


class RawF:
    """Registry ops applied straight to backend arrays (plain backward, nothing recorded)."""

    def __init__(self, xp, ctx):
        self._xp, self._ctx = xp, ctx

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        op = get_op(name)
        xp, ctx = self._xp, self._ctx
        # an op may keep a NumPy-promoting compute for gradient rules (legacy unary math)
        compute = getattr(op, "raw_compute", None) or op.compute
        nvis = op.fixed_nvis
        kw_ctx = {"ctx": ctx} if op.wants_ctx else {}

        def f(*arrays, **kw):
            p = op.parse_params(kw)
            try:
                r = compute(xp, p, *arrays, **kw_ctx)
            except GpundaError as e:
                if not isinstance(e, _deferred.DeferredOpError):
                    raise
                r = _deferred.poison_outputs(e, arrays, lambda a: compute(xp, p, *a, **kw_ctx))
            except Exception:
                # a gradient read a failed op's result: the failure travels on to the
                # gradients, as in a forward call (NOTE [Deferred op errors])
                failed = _deferred.failed_input(arrays)
                if failed is None:
                    raise
                r = _deferred.poison_outputs(failed, arrays,
                                             lambda a: compute(xp, p, *a, **kw_ctx))
            if op.fixed_nout == 1:
                return r
            n = nvis if nvis is not None else op.n_visible(p)
            return r[0] if n == 1 else list(r)[:n]
        f.__name__ = name
        setattr(self, name, f)
        return f


_raw_fs = {}


def raw_namespace(ctx):
    """The RawF of ``ctx`` (one per context, its op functions cached on it)."""
    f = _raw_fs.get(ctx)
    if f is None:
        f = _raw_fs[ctx] = RawF(ctx.backend.xp, ctx)
    return f
