"""DataLoader, utils, metrics, initializers and lr schedulers."""
import math

import numpy as np
import pytest

import gpunda as mx
from gpunda import gluon, nd
from gpunda.base import GpundaError
from gpunda.gluon import nn
from gpunda.gluon.data import ArrayDataset, DataLoader, SimpleDataset

CPU = mx.cpu()


def test_dataloader_last_batch_modes():
    x = np.arange(10, dtype=np.float32).reshape(10, 1)
    y = np.arange(10)
    ds = ArrayDataset(x, y)
    assert len(ds) == 10 and ds[3][1] == 3
    sizes = [b[0].shape[0] for b in DataLoader(ds, batch_size=4)]
    assert sizes == [4, 4, 2]
    assert [b[0].shape[0] for b in DataLoader(ds, batch_size=4, last_batch="discard")] == [4, 4]
    dl = DataLoader(ds, batch_size=4, last_batch="rollover")
    first = [b[1].asnumpy().tolist() for b in dl]
    second = [b[1].asnumpy().tolist() for b in dl]
    assert first == [[0, 1, 2, 3], [4, 5, 6, 7]]
    assert second[0] == [8, 9, 0, 1]        # the leftover starts the next epoch
    np.random.seed(1)
    seen = np.concatenate([b[1].asnumpy() for b in DataLoader(ds, batch_size=3, shuffle=True)])
    assert sorted(seen.tolist()) == list(range(10)) and seen.tolist() != list(range(10))
    with pytest.raises(GpundaError, match="last_batch"):
        DataLoader(ds, batch_size=3, last_batch="sometimes")
    with pytest.raises(GpundaError, match="same length"):
        ArrayDataset(x, y[:5])


def test_dataloader_generic_dataset_and_batchify():
    ds = SimpleDataset([(np.full(2, i, np.float32), i) for i in range(5)])
    batches = list(DataLoader(ds.transform_first(lambda a: a * 2), batch_size=2))
    assert len(batches) == 3
    np.testing.assert_array_equal(batches[0][0].asnumpy(), [[0, 0], [2, 2]])
    np.testing.assert_array_equal(batches[2][1].asnumpy(), [4])
    cat = list(DataLoader(ds, batch_size=5, batchify_fn=lambda s: len(s)))
    assert cat == [5]


def test_split_and_load_and_clip_global_norm(rng):
    x = rng.standard_normal((6, 2)).astype(np.float32)
    parts = gluon.utils.split_and_load(x, [mx.cpu(0), mx.cpu(1)])
    assert [p.context for p in parts] == [mx.cpu(0), mx.cpu(1)]
    np.testing.assert_array_equal(np.concatenate([p.asnumpy() for p in parts]), x)
    with pytest.raises(ValueError, match="evenly"):     # MXNet raises ValueError
        gluon.utils.split_and_load(x[:5], [mx.cpu(0), mx.cpu(1)])
    a, b = rng.standard_normal(3).astype(np.float32), rng.standard_normal((2, 2)).astype(np.float32)
    arrs = [nd.array(a, ctx=CPU), nd.array(b, ctx=CPU)]
    norm = math.sqrt((a.astype(np.float64) ** 2).sum() + (b.astype(np.float64) ** 2).sum())
    got = gluon.utils.clip_global_norm(arrs, 1.0)
    assert abs(got - norm) < 1e-4
    np.testing.assert_allclose(arrs[0].asnumpy(), a / norm, rtol=1e-5)


def test_split_data_uneven_matches_numpy(rng):
    x = rng.standard_normal((4, 33, 2))
    for n in (4, 15):
        parts = gluon.utils.split_data(nd.array(x), n, batch_axis=1, even_split=False)
        for got, want in zip(parts, np.array_split(x, n, axis=1)):
            np.testing.assert_allclose(got.asnumpy(), want.astype(np.float32))


@pytest.mark.parametrize("stype", ["default", "row_sparse"])
def test_clip_global_norm_sparse(stype):
    x1, x2 = nd.ones((3, 3)).tostype(stype), nd.ones((4, 4)).tostype(stype)
    assert gluon.utils.clip_global_norm([x1, x2], 1.0) == 5.0
    np.testing.assert_allclose(x2.asnumpy(), np.full((4, 4), 0.2), rtol=1e-6)


def test_metrics():
    acc = mx.metric.create("acc")
    acc.update([nd.array([0, 1, 2])], [nd.array([[0.9, 0.1, 0], [0.2, 0.7, 0.1], [0.5, 0.3, 0.2]])])
    assert acc.get() == ("accuracy", 2 / 3)
    top2 = mx.metric.TopKAccuracy(top_k=2)
    top2.update([nd.array([2])], [nd.array([[0.5, 0.1, 0.4]])])
    assert top2.get()[1] == 1.0
    comp = mx.metric.create(["acc", "loss"])
    comp.update([nd.array([1])], [nd.array([[0.2, 0.8]])])
    names, vals = comp.get()
    assert names == ["accuracy", "loss"] and vals[0] == 1.0 and abs(vals[1] - 0.5) < 1e-6  # loss: mean element
    acc.reset()
    assert math.isnan(acc.get()[1])
    with pytest.raises(GpundaError, match="unknown metric"):
        mx.metric.create("accuracyy")


def test_initializers(rng):
    mx.random.seed(3)
    arr = nd.zeros((40, 30), ctx=CPU)
    mx.init.Xavier()(mx.init.InitDesc("x_weight"), arr)
    bound = math.sqrt(3.0 / ((40 + 30) / 2))
    v = arr.asnumpy()
    assert np.abs(v).max() <= bound and np.abs(v).max() > 0.9 * bound
    g = nd.zeros((200, 100, 3, 3), ctx=CPU)
    mx.init.MSRAPrelu(slope=0.0, factor_type="in")(mx.init.InitDesc("c_weight"), g)
    assert abs(g.asnumpy().std() - math.sqrt(2.0 / 900)) < 0.002
    b = nd.ones((4,), ctx=CPU)
    mx.init.Xavier()(mx.init.InitDesc("x_bias"), b)          # suffix rule: bias -> 0
    np.testing.assert_array_equal(b.asnumpy(), np.zeros(4))
    with pytest.raises(GpundaError, match="at least 2"):
        mx.init.Xavier()(mx.init.InitDesc("v", {"__init__": "xavier"}), nd.zeros((3,), ctx=CPU))
    assert isinstance(mx.init.create("xavier"), mx.init.Xavier)
    assert isinstance(mx.init.create('["normal", {"sigma": 2.0}]'), mx.init.Normal)
    with pytest.raises(GpundaError, match="unknown initializer"):
        mx.init.create("xavierr")
    d = nn.Dense(3, in_units=2, weight_initializer="ones", bias_initializer=mx.init.Constant(7))
    d.initialize(ctx=CPU)
    np.testing.assert_array_equal(d.weight.data().asnumpy(), np.ones((3, 2)))
    np.testing.assert_array_equal(d.bias.data().asnumpy(), np.full(3, 7.0))
    d2 = nn.Dense(3, in_units=2)
    with pytest.raises(GpundaError, match="unknown initializer"):
        d2.initialize(init="nope", ctx=CPU)
    # seeding makes initialisation reproducible
    vals = []
    for _ in range(2):
        mx.random.seed(11)
        d3 = nn.Dense(4, in_units=4)
        d3.initialize(mx.init.Uniform(0.5), ctx=CPU)
        vals.append(d3.weight.data().asnumpy())
    np.testing.assert_array_equal(vals[0], vals[1])


def test_lr_schedulers():
    f = mx.lr_scheduler.FactorScheduler(step=10, factor=0.5, base_lr=1.0)
    assert [f(n) for n in (1, 10, 11, 21, 35)] == [1.0, 1.0, 0.5, 0.25, 0.125]
    m = mx.lr_scheduler.MultiFactorScheduler(step=[5, 8], factor=0.1, base_lr=1.0)
    assert [round(m(n), 6) for n in (5, 6, 8, 9)] == [1.0, 0.1, 0.1, 0.01]
    c = mx.lr_scheduler.CosineScheduler(max_update=100, base_lr=1.0, final_lr=0.0)
    assert abs(c(50) - 0.5) < 1e-12 and abs(c(100)) < 1e-12
    p = mx.lr_scheduler.PolyScheduler(max_update=10, base_lr=1.0, pwr=2)
    assert abs(p(5) - 0.25) < 1e-12
    w = mx.lr_scheduler.CosineScheduler(max_update=20, base_lr=1.0, warmup_steps=10,
                                        warmup_begin_lr=0.0)
    assert abs(w(5) - 0.5) < 1e-12
    with pytest.raises(GpundaError, match="factor"):
        mx.lr_scheduler.FactorScheduler(step=2, factor=2.0)


def test_filtered_dataset_and_transform_first_closure_match_mxnet():
    from gpunda.gluon.data.dataset import _FilteredDataset, _TransformFirstClosure
    d = _FilteredDataset(SimpleDataset(list(range(10))), lambda s: s % 3 == 0)
    assert len(d) == 4
    assert [d[i] for i in range(len(d))] == [0, 3, 6, 9]
    assert d[-1] == 9
    t = _TransformFirstClosure(lambda v: v * 10)
    assert t(2) == 20
    assert t(2, "a", "b") == (20, "a", "b")
    ds = ArrayDataset(np.arange(4), np.arange(4) + 10).transform_first(lambda v: v * 2)
    assert type(ds._fn).__name__ == "_TransformFirstClosure"      # as MXNet's transform_first
    assert [tuple(int(v) for v in ds[i]) for i in range(4)] == [(0, 10), (2, 11), (4, 12),
                                                               (6, 13)]
