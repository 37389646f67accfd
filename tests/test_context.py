"""Contexts, default-device selection and GPU discovery (CPU-only machine paths)."""
import logging
import pickle
import sys
import threading

import pytest

import gpunda as mx
from gpunda import context as ctxmod
from gpunda.backends import discovery


def test_context_value_semantics():
    assert mx.cpu(0) is mx.cpu(0) is mx.Context("cpu", 0) is mx.Context(mx.cpu())
    assert mx.gpu(1) == mx.Context("gpu", 1) and mx.gpu(1) != mx.gpu(0) and mx.gpu(0) != mx.cpu(0)
    assert repr(mx.gpu(1)) == "gpu(1)" and str(mx.cpu()) == "cpu(0)"
    assert len({mx.cpu(0), mx.cpu(0), mx.gpu(0), mx.gpu(1)}) == 3
    assert pickle.loads(pickle.dumps(mx.gpu(3))) is mx.gpu(3)
    assert mx.cpu().device_typeid == 1 and mx.gpu().device_typeid == 2


def test_context_bad_values():
    with pytest.raises(mx.GpundaError, match="'tpu'"):
        mx.Context("tpu", 0)
    with pytest.raises(mx.GpundaError, match="device_id=-1"):
        mx.gpu(-1)
    with pytest.raises(mx.GpundaError, match="device_id='a'"):
        mx.cpu("a")


def test_with_scope_nests_and_restores():
    base = mx.current_context()
    with mx.cpu(1):
        assert mx.current_context() == mx.cpu(1)
        assert mx.nd.zeros((2,)).context == mx.cpu(1)
        with mx.cpu(2):
            assert mx.current_context() == mx.cpu(2)
        assert mx.current_context() == mx.cpu(1)
    assert mx.current_context() == base


def test_scope_is_thread_local():
    seen = []
    with mx.cpu(5):
        t = threading.Thread(target=lambda: seen.append(mx.current_context()))
        t.start()
        t.join()
    assert seen[0] != mx.cpu(5)


def test_cpu_arrays_compute_on_cpu_contexts():
    a = mx.nd.ones((2,), ctx=mx.cpu(1))
    b = mx.nd.ones((2,), ctx=mx.cpu(1))
    assert (a + b).context == mx.cpu(1)


def test_mixing_a_gpu_with_the_cpu_is_an_error_naming_both(fake_gpu):
    a = mx.nd.ones((2,), ctx=mx.cpu(0))
    b = mx.nd.ones((2,), ctx=fake_gpu)
    for f in (lambda: a + b, lambda: b * a, lambda: mx.nd.elemwise_add(a, b),
              lambda: mx.nd.dot(a, b)):
        with pytest.raises(mx.GpundaError) as e:
            f()
        assert "cpu(0)" in str(e.value) and "gpu(7)" in str(e.value)


@pytest.mark.parametrize("other", [mx.cpu(1), mx.cpu_pinned(0), mx.Context("cpu_shared", 0)])
def test_cpu_contexts_share_memory_as_in_mxnet(other):
    # MXNet 1.9.1: cpu(0) + cpu(1) works and the result is on the first input's context
    a = mx.nd.array([1.0, 2.0], ctx=mx.cpu(0))
    b = mx.nd.array([10.0, 20.0], ctx=other)
    assert (a + b).asnumpy().tolist() == [11.0, 22.0]
    assert (a + b).context == mx.cpu(0)
    # the first input's context, but cpu_pinned(i)/cpu_shared(i) do not propagate: cpu(i)
    assert (b - a).context == (other if other.device_type == "cpu" else mx.cpu(0))
    assert mx.nd.concat(a, b, dim=0).asnumpy().tolist() == [1.0, 2.0, 10.0, 20.0]
    out = mx.nd.zeros((2,), ctx=other)
    mx.nd.elemwise_mul(a, a, out=out)
    assert out.asnumpy().tolist() == [1.0, 4.0] and out.context == other
    c = a.copy()
    c[:] = b
    assert c.asnumpy().tolist() == [10.0, 20.0]
    assert a[mx.nd.array([1], ctx=other)].asnumpy().tolist() == [2.0]


def test_shares_memory_space():
    from gpunda.context import shares_memory_space
    assert shares_memory_space(mx.cpu(0), mx.cpu_pinned(3))
    assert shares_memory_space(mx.gpu(1), mx.gpu(1))
    assert not shares_memory_space(mx.gpu(0), mx.gpu(1))
    assert not shares_memory_space(mx.cpu(0), mx.gpu(0))


@pytest.fixture
def fresh_default(monkeypatch):
    # these tests are about finding real GPUs: the test stand-in (--standin-gpu) is off
    monkeypatch.delenv("GPUNDA_TEST_STANDIN_GPU", raising=False)
    monkeypatch.setattr(discovery, "_probe_result", None)
    ctxmod._reset_default_for_tests()
    yield monkeypatch
    discovery._probe_result = None
    ctxmod._reset_default_for_tests()


def _no_cupy(monkeypatch):
    monkeypatch.setitem(sys.modules, "cupy", None)   # import cupy -> ImportError


@pytest.mark.parametrize("value", ["gpu:x", "tpu", "gpu:", "cuda", "gpu:-1"])
def test_malformed_default_device_quotes_value(fresh_default, value):
    fresh_default.setenv("GPUNDA_DEFAULT_DEVICE", value)
    with pytest.raises(mx.GpundaError, match=repr(value).replace("(", r"\(")):
        ctxmod.default_device_choice()


@pytest.mark.parametrize("value", ["gpu", "gpu:0", "auto", "GPU"])
def test_fallback_to_cpu_without_gpu_logs_once(fresh_default, caplog, value):
    _no_cupy(fresh_default)
    fresh_default.setenv("GPUNDA_DEFAULT_DEVICE", value)
    fresh_default.delenv("GPUNDA_REQUIRE_GPU", raising=False)
    with caplog.at_level(logging.INFO, logger="gpunda"):
        ctx, reason = ctxmod.default_device_choice()
        ctxmod.default_device_choice()
    assert ctx == mx.cpu(0)
    assert "CuPy is not installed" in reason
    msgs = [r for r in caplog.records if "no usable GPU" in r.getMessage()]
    assert len(msgs) == 1


def test_require_gpu_turns_fallback_into_error(fresh_default):
    _no_cupy(fresh_default)
    fresh_default.setenv("GPUNDA_DEFAULT_DEVICE", "gpu")
    fresh_default.setenv("GPUNDA_REQUIRE_GPU", "1")
    with pytest.raises(mx.GpundaError, match="GPUNDA_REQUIRE_GPU=1") as err:
        ctxmod.default_device_choice()
    # the whole reason, the install hint included, and the way out
    _, why = discovery.probe()
    assert why.startswith("CuPy is not installed") and why.endswith("pip install 'gpunda[gpu]'")
    assert str(err.value) == (f"GPUNDA_REQUIRE_GPU=1 asks for a GPU, but none is usable: {why}. "
                              f"Unset GPUNDA_REQUIRE_GPU (or set it to 0) to compute on cpu(0) "
                              f"instead")


def test_require_gpu_message_names_an_empty_visible_devices(fresh_default):
    fresh_default.setenv("CUDA_VISIBLE_DEVICES", "")
    fresh_default.setenv("GPUNDA_REQUIRE_GPU", "yes")
    with pytest.raises(mx.GpundaError, match=r"^GPUNDA_REQUIRE_GPU=yes asks for a GPU, but none "
                                             r"is usable: CUDA_VISIBLE_DEVICES is empty\. Unset"):
        ctxmod.default_device_choice()


def test_cpu_choice_needs_no_probe(fresh_default):
    fresh_default.setenv("GPUNDA_DEFAULT_DEVICE", "cpu")
    assert ctxmod.default_device_choice()[0] == mx.cpu(0)


def test_probe_reports_empty_visible_devices(fresh_default):
    fresh_default.setenv("CUDA_VISIBLE_DEVICES", "")
    n, why = discovery.probe()
    assert n == 0 and "CUDA_VISIBLE_DEVICES" in why


class _FakeRuntimeError(RuntimeError):
    pass


def test_probe_survives_a_broken_driver(fresh_default):
    class FakeRuntime:
        @staticmethod
        def getDeviceCount():
            raise _FakeRuntimeError("cudaErrorInsufficientDriver: driver too old")

    class FakeCuda:
        runtime = FakeRuntime

    class FakeCupy:
        cuda = FakeCuda
        __version__ = "14.2.0"

    fresh_default.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    fresh_default.setitem(sys.modules, "cupy", FakeCupy)
    n, why = discovery.probe()
    assert n == 0 and "InsufficientDriver" in why


def test_gpu_context_without_gpu_raises_on_use(fresh_default):
    _no_cupy(fresh_default)
    from gpunda import backends
    fresh_default.setattr(backends, "_gpus", {})
    g = mx.Context("gpu", 7)
    g._backend = None
    with pytest.raises(mx.GpundaError, match="gpu\\(7\\) is not usable"):
        mx.nd.zeros((2,), ctx=g)
    assert mx.num_gpus() == 0


@pytest.mark.parametrize("value, uuids, expected", [
    (None, ["GPU-a", "GPU-b"], [0, 1]),
    ("1,0", ["GPU-a", "GPU-b"], [1, 0]),
    ("1", ["GPU-a", "GPU-b"], [1]),
    ("0,-1,1", ["GPU-a", "GPU-b"], [0]),        # an invalid entry ends the list
    ("0,0", ["GPU-a", "GPU-b"], []),            # a repeated device hides all
    ("GPU-b", ["GPU-aaa", "GPU-bbb"], [1]),     # UUID prefix
    ("GPU-x", ["GPU-aaa", "GPU-bbb"], []),      # unknown UUID
    ("5", ["GPU-a"], []),                       # out of range
    ("", ["GPU-a"], []),
])
def test_parse_visible_devices(value, uuids, expected):
    assert discovery.parse_visible_devices(value, uuids) == expected


def test_info_command_runs(capsys):
    from gpunda.__main__ import main
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    assert "numpy" in out and "default device:" in out


def test_features_report_sparse_and_cuda():
    f = mx.runtime.Features()
    assert f.is_enabled("sparse") is True
    assert f.is_enabled("CUDA") == (mx.num_gpus() > 0)
    with pytest.raises(RuntimeError, match="is unknown"):
        f.is_enabled("quantum")


@pytest.mark.gpu
def test_gpu_context_computes_on_gpu():
    a = mx.nd.array([1.0, 2.0], ctx=mx.gpu(0))
    assert a.context == mx.gpu(0)
    assert a.context.backend.is_gpu and type(a._data) is a.context.backend.xp.ndarray
    assert ((a * 2).asnumpy() == [2.0, 4.0]).all()
    gpus = discovery.list_gpus()
    assert gpus and gpus[0].total_bytes and gpus[0].name
    free, total = mx.gpu_memory_info(0)
    assert 0 < free <= total


@pytest.mark.gpu
def test_gpu_cpu_mixing_is_an_error():
    a = mx.nd.ones((2,), ctx=mx.gpu(0))
    b = mx.nd.ones((2,), ctx=mx.cpu(0))
    with pytest.raises(mx.GpundaError, match="gpu\\(0\\).*cpu\\(0\\)|cpu\\(0\\).*gpu\\(0\\)"):
        a + b
    assert (a.as_in_context(mx.cpu()) + b).asnumpy().tolist() == [2.0, 2.0]


@pytest.mark.gpu
def test_setitem_copies_a_value_from_another_device_as_mxnet():
    # MXNet's __setitem__ moves an NDArray value to the target's device first
    a = mx.nd.zeros((2, 3), ctx=mx.cpu(0))
    g = mx.nd.array([[1.0, 2.0, 3.0]], ctx=mx.gpu(0))
    a[1:2] = g
    a[0] = mx.nd.array([4.0, 5.0, 6.0], ctx=mx.gpu(0))
    assert a.context == mx.cpu(0)
    assert a.asnumpy().tolist() == [[4.0, 5.0, 6.0], [1.0, 2.0, 3.0]]
    assert g.context == mx.gpu(0) and g.asnumpy().tolist() == [[1.0, 2.0, 3.0]]


def test_default_ctx_class_property_reads_and_sets_as_mxnet():
    import warnings
    with pytest.warns(DeprecationWarning, match="default_ctx has been deprecated"):
        assert mx.Context.default_ctx == mx.current_context()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert mx.cpu(7).default_ctx == mx.current_context()      # from an instance too
        base = mx.current_context()
        with mx.cpu(1):
            assert mx.Context.default_ctx == mx.cpu(1)
            mx.Context.default_ctx = mx.cpu(2)     # replaces the innermost scope...
            assert mx.current_context() == mx.cpu(2) and mx.nd.zeros(1).context == mx.cpu(2)
        assert mx.current_context() == base        # ...which its exit restores
        seen = []

        def outside_any_scope():
            mx.Context.default_ctx = mx.cpu(3)     # thread-local default
            with mx.cpu(4):
                seen.append(mx.current_context())
            seen.append(mx.current_context())
        t = threading.Thread(target=outside_any_scope)
        t.start()
        t.join()
        assert seen == [mx.cpu(4), mx.cpu(3)] and mx.current_context() == base
        with pytest.raises(mx.GpundaError, match="must be a Context"):
            mx.Context.default_ctx = "cpu"
        mx.Context.devtype_note = 1                # other class attributes set as usual
        assert mx.Context.devtype_note == 1
        del mx.Context.devtype_note


def test_device_type_tables_as_mxnet():
    # MXNet 1.9.1's Context.devtype2str / devstr2type
    assert mx.Context.devtype2str == {1: "cpu", 2: "gpu", 3: "cpu_pinned", 5: "cpu_shared"}
    assert mx.Context.devstr2type == {"cpu": 1, "gpu": 2, "cpu_pinned": 3, "cpu_shared": 5}
    assert mx.Context.devtype2str[mx.cpu(3).device_typeid] == "cpu"


@pytest.mark.parametrize("host", [mx.cpu_pinned(0), mx.Context("cpu_shared", 0)])
def test_pinned_and_shared_are_cpu_memory_as_in_mxnet(host):
    # recorded from MXNet 1.9.1: an op whose first input is on cpu_pinned(0)/cpu_shared(0)
    # gives cpu(0) (MXNet's GetContext: non-default contexts do not propagate); copies keep
    # the target; a gradient buffer is zeros_like's (cpu(0)); Parameters on cpu(0) serve
    # inputs on cpu_shared(0)/cpu_pinned(0) (DataLoader batches with workers) and back
    a = mx.nd.array([1.0, 2.0], ctx=mx.cpu(0))
    b = mx.nd.array([3.0, 4.0], ctx=host)
    assert (b + a).context == mx.cpu(0) and (b * 2).context == mx.cpu(0)
    assert mx.nd.dot(b.reshape((1, 2)), a.reshape((2, 1))).context == mx.cpu(0)
    assert mx.nd.exp(b).context == mx.cpu(0)
    assert (mx.np.ones((2,), ctx=host) + mx.np.ones((2,), ctx=mx.cpu(0))).ctx == mx.cpu(0)
    assert mx.nd.zeros((2,), ctx=host).context == host        # no input: the asked context
    assert a.copyto(host).context == host and a.as_in_context(host).context == host
    assert b.as_in_context(mx.cpu(0)).context == mx.cpu(0)
    assert b.reshape((2, 1)).context == host                   # a view keeps its array's
    x = mx.nd.array([1.0, 2.0], ctx=host)
    x.attach_grad()
    with mx.autograd.record():
        y = (x * a).sum()
    y.backward()
    assert x.grad.context == mx.cpu(0) and x.grad.asnumpy().tolist() == [1.0, 2.0]

    net = mx.gluon.nn.Dense(3, in_units=2)
    net.initialize(mx.init.One(), ctx=mx.cpu(0))
    trainer = mx.gluon.Trainer(net.collect_params(), "sgd", {"learning_rate": 0.5})
    with mx.autograd.record():
        out = net(b.reshape((1, 2)))
    out.backward()
    trainer.step(1)
    assert out.context == mx.cpu(0) and out.asnumpy().tolist() == [[7.0, 7.0, 7.0]]
    assert net.weight.data(host) is net.weight.data(mx.cpu(0))
    assert net.weight.data().asnumpy().tolist() == [[-0.5, -1.0]] * 3
    with pytest.raises(mx.GpundaError, match=r"cpu\(1\)"):     # cpu(1) is another device id
        net.weight.data(mx.cpu(1))
    p = mx.gluon.Parameter("w", shape=(2,))
    p.initialize(ctx=host)
    assert p.data(mx.cpu(0)).context == host and p.list_ctx() == [host]


def test_dataloader_workers_batch_on_cpu_shared_as_in_mxnet():
    ds = mx.gluon.data.ArrayDataset(mx.nd.ones((4, 2)), mx.nd.arange(4))
    for thread_pool in (False, True):      # MXNet 1.9.1: both pools give cpu_shared(0)
        loader = mx.gluon.data.DataLoader(ds, batch_size=2, num_workers=1,
                                          thread_pool=thread_pool)
        ctxs = {arr.context for batch in loader for arr in batch}
        assert ctxs == {mx.Context("cpu_shared", 0)}
    net = mx.gluon.nn.Dense(2)
    net.initialize(ctx=mx.cpu(0))
    net.hybridize()
    for x, _ in loader:                    # parameters found for cpu_shared inputs
        assert net(x).shape == (2, 2)
