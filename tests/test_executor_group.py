"""mx.module.executor_group: MXNet's module-level helpers, with answers recorded from
MXNet 1.9.1 (/work/mxref) on the same arrays."""
import subprocess
import sys

import numpy as np
import pytest

import gpunda as mx
from gpunda.module import executor_group as eg


def test_executor_group_is_an_attribute_of_module_after_import():
    # real MXNet: `import mxnet.module; mxnet.module.executor_group` is the submodule
    code = ("import gpunda.module as m, types; "
            "assert isinstance(m.executor_group, types.ModuleType); "
            "assert m.executor_group.__name__ == 'gpunda.module.executor_group'")
    subprocess.run([sys.executable, "-c", code], check=True, cwd=str(__import__("pathlib")
                   .Path(mx.__file__).parent.parent))


def test_load_general_slices_along_the_major_axis():
    src = mx.nd.array(np.arange(24).reshape(4, 6))
    t0 = [(slice(0, 1), mx.nd.zeros((1, 6))), (slice(1, 4), mx.nd.zeros((3, 6)))]
    t1 = [(slice(0, 2), mx.nd.zeros((4, 2))), (slice(2, 6), mx.nd.zeros((4, 4)))]
    t2 = [(slice(0, 2), mx.nd.zeros((4, 6)))]
    whole = mx.nd.zeros((4, 6))
    eg._load_general([src, src, src, src], [t0, t1, t2, whole], [0, 1, -1, 0])
    ref = np.arange(24).reshape(4, 6)
    assert t0[0][1].asnumpy().tolist() == ref[:1].tolist()
    assert t0[1][1].asnumpy().tolist() == ref[1:].tolist()
    assert t1[0][1].asnumpy().tolist() == ref[:, :2].tolist()
    assert t1[1][1].asnumpy().tolist() == ref[:, 2:].tolist()
    # a negative axis copies the whole source (MXNet 1.9.1: sum 276 in both)
    assert t2[0][1].asnumpy().sum() == 276 and whole.asnumpy().sum() == 276


def test_load_data_and_label_from_one_batch_and_from_pre_sliced_batches():
    src = mx.nd.array(np.arange(24).reshape(4, 6))
    batch = mx.io.DataBatch(data=[src], label=[mx.nd.array([1, 2, 3, 4])])
    td = [[(slice(0, 2), mx.nd.zeros((2, 6))), (slice(2, 4), mx.nd.zeros((2, 6)))]]
    tl = [[(slice(0, 2), mx.nd.zeros((2,))), (slice(2, 4), mx.nd.zeros((2,)))]]
    eg._load_data(batch, td, [0])
    eg._load_label(batch, tl, [0])
    assert [float(d.asnumpy().sum()) for _, d in td[0]] == [66.0, 210.0]
    assert [d.asnumpy().tolist() for _, d in tl[0]] == [[1.0, 2.0], [3.0, 4.0]]
    b1 = mx.io.DataBatch(data=[mx.nd.ones((2, 3))], label=[mx.nd.array([5, 6])])
    b2 = mx.io.DataBatch(data=[mx.nd.ones((2, 3)) * 2], label=[mx.nd.array([7, 8])])
    td = [[(slice(0, 2), mx.nd.zeros((2, 3))), (slice(2, 4), mx.nd.zeros((2, 3)))]]
    tl = [[(slice(0, 2), mx.nd.zeros((2,))), (slice(2, 4), mx.nd.zeros((2,)))]]
    eg._load_data([b1, b2], td, [0])
    eg._load_label([b1, b2], tl, [0])
    assert [d.asnumpy().tolist() for _, d in td[0]] == [[[1.0] * 3] * 2, [[2.0] * 3] * 2]
    assert [d.asnumpy().tolist() for _, d in tl[0]] == [[5.0, 6.0], [7.0, 8.0]]


def test_merge_multi_context_matches_mxnet():
    merged = eg._merge_multi_context(
        [[mx.nd.ones((1, 2)), mx.nd.zeros((2, 2))], [mx.nd.ones((2, 1)), mx.nd.zeros((2, 2))],
         [mx.nd.array([9.]), mx.nd.array([1.])]], [0, 1, -1])
    assert [x.asnumpy().tolist() for x in merged] == [
        [[1.0, 1.0], [0.0, 0.0], [0.0, 0.0]], [[1.0, 0.0, 0.0], [1.0, 0.0, 0.0]], [9.0]]


def test_prepare_group2ctxs_matches_mxnet():
    assert eg._prepare_group2ctxs(None, 2) == [None, None]
    got = eg._prepare_group2ctxs({"a": mx.cpu(1), "b": [mx.cpu(2), mx.cpu(3)],
                                  "c": [mx.cpu(4)]}, 2)
    assert got == [{"a": mx.cpu(1), "b": mx.cpu(2), "c": mx.cpu(4)},
                   {"a": mx.cpu(1), "b": mx.cpu(3), "c": mx.cpu(4)}]
    for bad in ([{}], {"a": [mx.cpu(), mx.cpu(), mx.cpu()]}, 5):   # AssertionError on MXNet
        with pytest.raises(AssertionError, match="group2ctxs"):
            eg._prepare_group2ctxs(bad, 2)
