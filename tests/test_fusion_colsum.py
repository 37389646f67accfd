"""Column sums in the group's backward kernel (NOTE [Column sums] in
gpunda/_engine/fusion/group.py): the gradients of a group's inputs broadcast over leading
axes (a Dense's bias, LayerNorm's gamma and beta) are summed by the backward kernel itself,
in the same launch.

Checked against the op-by-op plan (whose ops sum their own gradients with NumPy/CuPy's
sum): on the CPU (the fused view runs each kernel's NumPy evaluator) and on the test
stand-in gpu(0), where no `sum` call may remain in the fused backward."""
import numpy as np
import pytest

import gpunda as mx
from gpunda import autograd, sym
from gpunda._engine import fusion
from gpunda._engine.cached_op import CachedOp
from gpunda._engine.fusion.codegen import COLUMNS_PER_THREAD, THREADS
from gpunda._engine.fusion.group import column_sums
from gpunda._testing.fusion_models import WideRows, symbol_of


class _Lay:
    def __init__(self, shape):
        self.shape = shape


@pytest.mark.parametrize("it,shapes,row,want", [
    ((8, 5, 6), [(6,)], False, 6),                  # a Dense's bias
    ((8, 5, 6), [(1, 1, 6), (6,)], True, 6),        # LayerNorm's gamma and beta, a bias
    ((8, 5, 6), [(5, 6)], False, 30),               # a vector over the two last axes
    ((8, 5, 6), [(5, 6)], True, None),              # ... is not the row of a row group
    ((8, 5, 6), [(6,), (5, 6)], False, None),       # two widths
    ((2, 4, 3, 3), [(1, 4, 1, 1)], False, None),    # a convolution's bias, along axis 1
    ((8, 5, 1), [(5, 1)], False, 5),                # a trailing axis of one
    ((2, COLUMNS_PER_THREAD * THREADS + 1), [(COLUMNS_PER_THREAD * THREADS + 1,)], False,
     None),                                         # more columns than registers hold
])
def test_rule(it, shapes, row, want):
    assert column_sums(_Lay(it), [True] * len(shapes), shapes, row) == want


def test_rule_ignores_inputs_not_summed():
    assert column_sums(_Lay((4, 6)), [False, True], [(1, 1), (6,)], False) == 6
    assert column_sums(_Lay((4, 6)), [False, False], [(4, 6), (4, 6)], False) is None


def _graph():
    """Dense -> GELU, then Dense -> residual add -> LayerNorm: a bias group and a row
    group with a bias, gamma and beta."""
    x = sym.var("x")
    h = sym.LeakyReLU(sym.FullyConnected(x, num_hidden=6, flatten=False, name="fc1"),
                      act_type="gelu")
    y = sym.FullyConnected(h, num_hidden=5, flatten=False, name="fc2") + x
    s = sym.LayerNorm(y, name="ln") * 2
    shapes = {"x": (3, 4, 5), "fc1_weight": (6, 5), "fc1_bias": (6,), "fc2_weight": (5, 6),
              "fc2_bias": (5,), "ln_gamma": (5,), "ln_beta": (5,)}
    return s, shapes


def _run(cop, arrays):
    args = [mx.nd.array(a, ctx=mx.current_context()) for a in arrays]
    for a in args:
        a.attach_grad()
    with autograd.record():
        out = cop(*args)
    head = np.linspace(-1, 1, out.size).reshape(out.shape)
    out.backward(mx.nd.array(head, ctx=mx.current_context()))
    return [out.asnumpy()] + [a.grad.asnumpy() for a in args]


def _arrays(s, shapes):
    rs = np.random.RandomState(0)
    return [rs.randn(*shapes[n]).astype(np.float32) for n in s.list_inputs()]


def test_cpu_evaluator_sums_as_the_ops():
    s, shapes = _graph()
    arrays = _arrays(s, shapes)
    with mx.cpu():
        cop = CachedOp(s, {"static_alloc": True})
        view = cop._fused_view(True)
        ref, got = _run(cop, arrays), _run(view, arrays)
    for a, b in zip(ref, got):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    assert len(view._fusion_groups) == 2
    assert not any(g.fallbacks for g in view._fusion_groups)
    # every reduced gradient is an output of the kernel (no buffer shared for a sum)
    for g in view._fusion_groups:
        for stored in g._stored.values():
            assert stored == list(range(len(stored)))
    # counted: no group input sum is left
    c = fusion.kernel_counts(s, {"x": (3, 4, 5)}, train=True)
    assert c["by_kind"]["backward"].get("fused group input sum", 0) == 0


def test_standin_gpu_backward_launches_no_sum(standin_gpu):
    from gpunda.backends import _standin, _standin_array
    s, shapes = _graph()
    arrays = _arrays(s, shapes)
    with mx.cpu():
        ref = _run(CachedOp(s, {"static_alloc": True}), arrays)
    calls = []
    orig = _standin_array._call

    def spy(fn, args, kwargs, where, *a, **k):
        calls.append(where)
        return orig(fn, args, kwargs, where, *a, **k)
    with mx.gpu(0):
        cop = CachedOp(s, {"static_alloc": True})
        _run(cop, arrays)       # builds the plans and kernels
        _standin_array._call = _standin._call = spy
        try:
            got = _run(cop, arrays)
        finally:
            _standin_array._call = _standin._call = orig
    for a, b in zip(ref, got):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-5)
    view = cop._fusion_views[True]
    assert len(view._fusion_groups) == 2
    assert not any(g.fallbacks for g in view._fusion_groups)
    # the only sums are the GEMMs' (none): bias, gamma and beta come from the kernels
    assert "cupy.ndarray.sum" not in calls


def test_kernel_source_has_the_column_tail():
    s, shapes = _graph()
    srcs = fusion.sources_for(s, {"x": (3, 4, 5)}, train=True)
    tails = [src for _, src in srcs if "atomicAdd(cnt_, 1u)" in src]
    # the GELU group's backward and the LayerNorm group's (a row kernel)
    assert len(tails) == 2
    for src in tails:
        assert "*cnt_ = 0u;" in src and "__threadfence();" in src
    assert any("sh_float" in src for src in tails)


def test_standin_gpu_rows_wider_than_a_block(standin_gpu):
    """Rows of 600 and 300 elements: each thread sums several columns."""
    x = np.random.RandomState(1).randn(2, 3, 300).astype(np.float32)
    got = []
    for ctx in (mx.cpu(), mx.gpu(0)):
        mx.random.seed(3)
        net = WideRows()
        net.initialize(mx.init.Xavier(), ctx=ctx)
        net.hybridize(static_alloc=True)
        with autograd.record():
            y = net(mx.nd.array(x, ctx=ctx))
        y.backward()
        got.append([y.asnumpy()] + [p.grad(ctx).asnumpy()
                                    for p in net.collect_params().values()])
        if ctx.device_type == "gpu":
            groups = net._cached_op._fusion_views[True]._fusion_groups
            assert len(groups) == 2 and not any(g.fallbacks for g in groups)
    for a, b in zip(*got):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)
    c = fusion.kernel_counts(symbol_of(WideRows(), "x"), {"x": (2, 3, 300)}, train=True)
    assert c["by_kind"]["backward"].get("fused group input sum", 0) == 0
