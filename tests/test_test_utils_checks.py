"""gpunda.test_utils: gradient and graph checks, consistency runners, downloads and data sets."""
import bz2
import gzip
import os
import struct
import zipfile

import numpy as np
import pytest

import gpunda as mx
from gpunda import test_utils as tu
from gpunda.base import GpundaError

nd = mx.nd


def _tanh_times():
    a, b = mx.sym.Variable("a"), mx.sym.Variable("b")
    return mx.sym.tanh(a) * b


def _loc(seed=0):
    rng = np.random.RandomState(seed)
    return {"a": rng.uniform(-1, 1, (2, 3)), "b": rng.uniform(0.5, 1.5, (2, 3))}


# ---------------------------------------------------------------- finite differences

def test_numeric_grad_of_a_callable_matches_closed_form():
    x = np.array([0.3, -0.7, 1.1])
    g = tu.numeric_grad(lambda a: nd.sin(a) * a, [x], eps=1e-5, dtype=np.float64)
    np.testing.assert_allclose(g[0], np.cos(x) * x + np.sin(x), rtol=1e-8)
    gd = tu.numeric_grad(lambda a, b: a * b, {"a": x, "b": 2 * x}, eps=1e-5, dtype=np.float64)
    np.testing.assert_allclose(gd["a"], 2 * x, rtol=1e-8)
    np.testing.assert_allclose(gd["b"], x, rtol=1e-8)


def test_numeric_grad_of_an_executor_sums_output0():
    loc = _loc()
    exe = _tanh_times().bind(mx.cpu(), args={k: nd.array(v, dtype="float64")
                                            for k, v in loc.items()})
    g = tu.numeric_grad(exe, {k: v.copy() for k, v in loc.items()}, eps=2.0 ** -14,
                        dtype=np.float64)
    np.testing.assert_allclose(g["a"], loc["b"] * (1 - np.tanh(loc["a"]) ** 2), rtol=1e-6)
    np.testing.assert_allclose(g["b"], np.tanh(loc["a"]), rtol=1e-6)
    # the bound arguments are restored afterwards
    np.testing.assert_array_equal(exe.arg_dict["a"].asnumpy(), loc["a"])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_check_numeric_gradient_on_a_symbol(dtype):
    np.random.seed(1)
    loc = _loc()
    tu.check_numeric_gradient(_tanh_times(), loc, dtype=dtype)
    tu.check_numeric_gradient(_tanh_times(), [loc["a"], loc["b"]], grad_nodes=["b"], dtype=dtype)
    tu.check_numeric_gradient(_tanh_times(), loc, grad_nodes={"a": "add", "b": "null"},
                              dtype=dtype)


def test_check_numeric_gradient_catches_a_wrong_symbol_gradient():
    # BlockGrad(a) * a has value a*a but its backward is a, not 2a
    a = mx.sym.Variable("a")
    with pytest.raises(AssertionError, match="NUMERICAL_a"):
        tu.check_numeric_gradient(mx.sym.BlockGrad(a) * a, [np.array([[0.5, 1.5]])],
                                  dtype=np.float64)


def test_check_numeric_gradient_on_a_callable():
    rng = np.random.default_rng(0)
    loc = [rng.uniform(0.5, 1.5, (2, 3)), rng.uniform(0.5, 1.5, (2, 3))]
    tu.check_numeric_gradient(lambda a, b: nd.tanh(a) * b + nd.exp(b), loc, dtype=np.float32)
    tu.check_numeric_gradient(lambda a, b: a / b, {"a": loc[0], "b": loc[1]}, grad_nodes=["b"],
                              dtype=np.float64)

    class Wrong(mx.autograd.Function):
        def forward(self, x):
            return x * x

        def backward(self, dy):
            return dy * 3       # should be 2x

    with pytest.raises(AssertionError, match="numeric gradient of 0"):
        tu.check_numeric_gradient(lambda x: Wrong()(x), [np.array([1.0, 2.0])], dtype=np.float64)


def test_check_numeric_gradient_bad_arguments():
    with pytest.raises(GpundaError, match="callable"):
        tu.check_numeric_gradient(42, [np.ones(2)])
    with pytest.raises(GpundaError, match="grad_nodes"):
        tu.check_numeric_gradient(lambda a: a * 2, {"a": np.ones(2)}, grad_nodes=["z"])
    with pytest.raises(GpundaError, match="grad_nodes"):
        tu.check_numeric_gradient(_tanh_times(), _loc(), grad_nodes=["z"])
    with pytest.raises(ValueError, match="do not match"):
        tu.check_numeric_gradient(_tanh_times(), {"a": np.ones((2, 3))})
    with pytest.raises(GpundaError, match="dtype"):
        tu.check_numeric_gradient(_tanh_times(), _loc(), dtype=np.int32)
    with pytest.raises(GpundaError, match="too small"):
        tu.check_numeric_gradient(_tanh_times(), _loc(), numeric_eps=1e-7)


# ---------------------------------------------------------------- symbolic checks

def test_check_symbolic_forward():
    s, loc = _tanh_times(), _loc()
    want = np.tanh(loc["a"]) * loc["b"]
    outs = tu.check_symbolic_forward(s, loc, [want])
    assert isinstance(outs[0], nd.NDArray) and outs[0].dtype == np.float32
    tu.check_symbolic_forward(s, [loc["a"], loc["b"]], {s.list_outputs()[0]: want},
                              dtype=np.float64)
    with pytest.raises(AssertionError, match="EXPECTED_"):
        tu.check_symbolic_forward(s, loc, [want + 0.1])
    assert tu.check_symbolic_forward(s, loc, [want], dtype="asnumpy")[0].dtype == np.float64
    with pytest.raises(GpundaError, match="Symbol"):
        tu.check_symbolic_forward(lambda a: a, [np.ones(2)], [np.ones(2)])


def test_check_symbolic_backward_write_add_null():
    s, loc = _tanh_times(), _loc()
    og = np.random.RandomState(2).normal(size=(2, 3))
    da = og * loc["b"] * (1 - np.tanh(loc["a"]) ** 2)
    db = og * np.tanh(loc["a"])
    grads = tu.check_symbolic_backward(s, loc, [og], {"a": da, "b": db})
    np.testing.assert_allclose(grads["a"].asnumpy(), da, rtol=1e-5)
    tu.check_symbolic_backward(s, loc, [og], [da, db], grad_req="add")
    tu.check_symbolic_backward(s, loc, [og], {"a": da, "b": db}, grad_req={"a": "null",
                                                                         "b": "write"})
    tu.check_symbolic_backward(s, loc, [og], {"a": da}, grad_req="null")
    with pytest.raises(AssertionError, match="BACKWARD_b"):
        tu.check_symbolic_backward(s, loc, [og], {"a": da, "b": db * 2})
    with pytest.raises(GpundaError, match="Symbol"):
        tu.check_symbolic_backward(lambda a: a, [np.ones(2)], [np.ones(2)], [np.ones(2)])


def test_simple_forward():
    loc = _loc()
    out = tu.simple_forward(_tanh_times(), **loc)
    np.testing.assert_allclose(out, np.tanh(loc["a"]) * loc["b"], rtol=1e-5)
    a = mx.sym.Variable("a")
    two = tu.simple_forward(mx.sym.Group([a * 2, a + 1]), a=np.ones(2))
    np.testing.assert_array_equal(two[0], [2, 2])
    np.testing.assert_array_equal(two[1], [2, 2])


# ---------------------------------------------------------------- runners

def _ctx_list(*dtypes):
    return [{"ctx": mx.cpu(0), "a": (2, 3), "b": (2, 3),
             "type_dict": {"a": dt, "b": dt}} for dt in dtypes]


def test_check_consistency_across_dtypes():
    np.random.seed(3)
    gt = tu.check_consistency(_tanh_times(), _ctx_list(np.float32, np.float64))
    assert gt["a"].dtype == np.float64 and set(gt) >= {"a", "b"}
    gt = tu.check_consistency(_tanh_times(), _ctx_list(np.float16, np.float32), grad_req="null")
    assert all(v.dtype == np.float32 for v in gt.values())
    args = {"a": np.zeros((2, 3)), "b": np.ones((2, 3))}
    s = _tanh_times()
    out_name = s.list_outputs()[0]
    with pytest.raises(AssertionError):
        tu.check_consistency(s, _ctx_list(np.float32, np.float64), arg_params=args,
                             ground_truth={out_name: np.ones((2, 3)), "a": np.zeros((2, 3)),
                                           "b": np.zeros((2, 3))})
    tu.check_consistency(s, _ctx_list(np.float32, np.float64), arg_params=args,
                         ground_truth={out_name: np.ones((2, 3))}, grad_req="null",
                         raise_on_err=False)
    with pytest.raises(GpundaError, match="at least 2"):
        tu.check_consistency(_tanh_times(), _ctx_list(np.float32))


def test_check_speed():
    t = tu.check_speed(_tanh_times(), N=2, a=(2, 3), b=(2, 3))
    assert isinstance(t, float) and t > 0
    assert tu.check_speed(_tanh_times(), location=_loc(), typ="forward", N=2) > 0
    with pytest.raises(ValueError, match="typ"):
        tu.check_speed(_tanh_times(), location=_loc(), typ="backward")


def test_check_gluon_hybridize_consistency():
    from gpunda.gluon import nn

    def build(prefix):
        net = nn.HybridSequential(prefix=prefix)
        with net.name_scope():
            net.add(nn.Dense(4, in_units=3, activation="tanh"), nn.Dense(2, in_units=4))
        return net
    np.random.seed(4)
    x = nd.array(np.random.rand(5, 3))
    tu.check_gluon_hybridize_consistency(build, [x])

    def numpy_net(v):
        return np.zeros((v.shape[0], 2))   # not what the net computes
    with pytest.raises(AssertionError):
        tu.check_gluon_hybridize_consistency(build, [x], numpy_func=numpy_net)


def test_compare_optimizer():
    sgd = mx.optimizer.SGD
    tu.compare_optimizer(sgd(learning_rate=0.1, momentum=0.9), sgd(learning_rate=0.1,
                                                                  momentum=0.9), (3, 4),
                         np.float32)
    tu.compare_optimizer(sgd(learning_rate=0.1), sgd(learning_rate=0.1), (3, 4), np.float32,
                         g_stype="row_sparse")
    with pytest.raises(AssertionError):
        tu.compare_optimizer(sgd(learning_rate=0.1), sgd(learning_rate=0.2), (3, 4), np.float32)
    with pytest.raises(GpundaError, match="storage type"):
        tu.compare_optimizer(sgd(), sgd(), (3, 4), np.float32, w_stype="dense")


# ---------------------------------------------------------------- downloads and data sets

def _url(path):
    return "file://" + os.path.abspath(path)


def test_download_fetches_reuses_and_overwrites(tmp_path):
    src = tmp_path / "src.bin"
    src.write_bytes(b"first")
    got = tu.download(_url(src), dirname=str(tmp_path / "out"))
    assert got == str(tmp_path / "out" / "src.bin") and open(got, "rb").read() == b"first"
    src.write_bytes(b"second")
    assert open(tu.download(_url(src), dirname=str(tmp_path / "out")), "rb").read() == b"first"
    tu.download(_url(src), dirname=str(tmp_path / "out"), overwrite=True)
    assert open(got, "rb").read() == b"second"
    named = tu.download(_url(src), fname=str(tmp_path / "named.bin"))
    assert named == str(tmp_path / "named.bin")


def test_download_failure_is_clear_and_leaves_no_file(tmp_path, capsys):
    dest = tmp_path / "x.gz"
    with pytest.raises(GpundaError, match="could not fetch http://127.0.0.1:9/x.gz") as ei:
        tu.download("http://127.0.0.1:9/x.gz", fname=str(dest), retries=1)
    assert "place the file at" in str(ei.value) and not dest.exists()
    assert os.listdir(tmp_path) == []
    assert "retrying, 1 attempt left" in capsys.readouterr().out
    with pytest.raises(GpundaError, match="retries"):
        tu.download("http://127.0.0.1:9/x.gz", retries=-1)


def _write_idx(folder, stem, n, opener=open, suffix=""):
    images = (np.arange(n * 28 * 28) % 256).astype(np.uint8).reshape(n, 28, 28)
    labels = (np.arange(n) % 10).astype(np.int8)
    with opener(os.path.join(folder, f"{stem}-images-idx3-ubyte{suffix}"), "wb") as f:
        f.write(struct.pack(">IIII", 2051, n, 28, 28) + images.tobytes())
    with opener(os.path.join(folder, f"{stem}-labels-idx1-ubyte{suffix}"), "wb") as f:
        f.write(struct.pack(">II", 2049, n) + labels.tobytes())
    return images, labels


def test_get_mnist_reads_local_files(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    images, labels = _write_idx(".", "train", 4, gzip.open, ".gz")
    _write_idx(".", "t10k", 2, gzip.open, ".gz")
    d = tu.get_mnist()
    assert d["train_data"].shape == (4, 1, 28, 28) and d["train_data"].dtype == np.float32
    np.testing.assert_allclose(d["train_data"][:, 0], images / 255.0, rtol=1e-6)
    np.testing.assert_array_equal(d["train_label"], labels)
    assert d["test_data"].shape == (2, 1, 28, 28)
    os.remove("t10k-labels-idx1-ubyte.gz")
    with pytest.raises(GpundaError, match="t10k-labels-idx1-ubyte.gz"):
        tu.get_mnist()


def test_get_mnist_iterator(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    os.makedirs("data")
    _write_idx("data", "train", 10)
    _write_idx("data", "t10k", 6)
    train, val = tu.get_mnist_iterator(4, (784,))
    batches = list(train)
    assert len(batches) == 2 and batches[0].data[0].shape == (4, 784)
    assert batches[0].label[0].shape == (4,)
    train, val = tu.get_mnist_iterator(3, (1, 28, 28), num_parts=2, part_index=1)
    b = next(iter(val))
    assert b.data[0].shape == (3, 1, 28, 28)
    np.testing.assert_array_equal(b.label[0].asnumpy(), [3, 4, 5])    # second half
    with pytest.raises(GpundaError, match="part_index"):
        tu.get_mnist_iterator(3, (784,), num_parts=2, part_index=2)


def test_get_zip_and_bz2_data(tmp_path):
    z = tmp_path / "pack.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("inner.txt", "zipped")
    out = tmp_path / "zdir"
    tu.get_zip_data(str(out), _url(z), "pack.zip")
    assert (out / "inner.txt").read_text() == "zipped"
    b = tmp_path / "plain.txt.bz2"
    b.write_bytes(bz2.compress(b"line1\nline2\n"))
    bdir = tmp_path / "bdir"
    tu.get_bz2_data(str(bdir), "plain.txt", _url(b), "plain.txt.bz2")
    assert (bdir / "plain.txt").read_bytes() == b"line1\nline2\n"
    assert not (bdir / "plain.txt.bz2").exists()


def test_download_model(tmp_path):
    sym, params = tmp_path / "m-symbol.json", tmp_path / "m.params"
    sym.write_text("{}")
    params.write_bytes(b"P")
    meta = {"tiny": {"symbol": _url(sym), "params": _url(params)}}
    prefix, epoch = tu.download_model("tiny", dst_dir=str(tmp_path / "models"), meta_info=meta)
    assert epoch == 0 and os.path.exists(prefix + "-symbol.json")
    assert open(prefix + "-0000.params", "rb").read() == b"P"
    assert tu.download_model("unknown", meta_info=meta) == (None, 0)
    assert tu.download_model("not-a-model") == (None, 0)


def test_get_im2rec_path(tmp_path):
    with tu.environment("GPUNDA_TU_HOME", str(tmp_path)):
        with pytest.raises(IOError, match="im2rec"):
            tu.get_im2rec_path("GPUNDA_TU_HOME")
        (tmp_path / "tools").mkdir()
        (tmp_path / "tools" / "im2rec.py").write_text("")
        assert tu.get_im2rec_path("GPUNDA_TU_HOME") == str(tmp_path / "tools" / "im2rec.py")


def test_dummy_iter_repeats_the_first_batch():
    real = mx.io.NDArrayIter(np.arange(12.0).reshape(6, 2), np.arange(6.0), batch_size=2)
    it = tu.DummyIter(real)
    assert it.batch_size == 2 and it.provide_data == real.provide_data
    batches = [next(it) for _ in range(5)]
    assert all(b is batches[0] for b in batches)
    np.testing.assert_array_equal(batches[0].data[0].asnumpy(), [[0, 1], [2, 3]])
