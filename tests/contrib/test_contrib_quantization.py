"""mx.contrib.quantization's calibration helpers (collectors, loaders, the iterator wrapper)
against answers recorded from MXNet 1.9.1 (/work/mxref, MXNET_SUBGRAPH_BACKEND=NONE so its
graph keeps the same layer names) on the same network and inputs."""
import ctypes

import numpy as np
import pytest

import gpunda as mx
from gpunda.contrib import quantization as Q

X = np.array([[1., -2., 3., 0.5], [-1., 0.25, 2., -3.]], dtype=np.float32)
W = np.array([[0.1, 0.2, -0.3, 0.4], [-0.5, 0.6, 0.7, -0.8], [0.9, -1.0, 0.15, 0.25]],
             dtype=np.float32)
B = np.array([0.1, -0.2, 0.3], dtype=np.float32)


def _run(collect):
    """Forward the FC + relu net on X and 2X with ``collect`` as its monitor callback."""
    data = mx.sym.var("data")
    net = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=3, name="fc"),
                            act_type="relu", name="relu")
    ex = net.bind(mx.cpu(), {"data": mx.nd.array(X), "fc_weight": mx.nd.array(W),
                             "fc_bias": mx.nd.array(B)})
    ex.set_monitor_callback(collect, monitor_all=True)
    for scale in (1, 2):
        ex.arg_dict["data"][:] = mx.nd.array(X * scale)
        ex.forward()
        ex.outputs[0].wait_to_read()


def test_min_max_collector_matches_mxnet():
    mm = Q._LayerOutputMinMaxCollector("int8", include_layer={"fc_output", "relu_output",
                                                              "data"})
    _run(mm.collect)
    got = {k: (round(float(lo), 5), round(float(hi), 5)) for k, (lo, hi) in
           mm.min_max_dict.items()}
    assert got == {"data": (-6.0, 6.0), "fc_output": (-3.6, 8.7), "relu_output": (0.0, 8.7)}


def test_histogram_collector_matches_mxnet():
    hc = Q._LayerHistogramCollector(num_bins=7, include_layer={"fc_output", "relu_output"})
    _run(hc.collect)
    # the second batch reaches past the first one's threshold: 7 bins widen to 15
    edges = [-9.1071, -7.8929, -6.6786, -5.4643, -4.25, -3.0357, -1.8214, -0.6071, 0.6071,
             1.8214, 3.0357, 4.25, 5.4643, 6.6786, 7.8929, 9.1071]
    hist, got_edges, lo, hi, th = hc.hist_dict["fc_output"]
    assert hist.tolist() == [0, 0, 0, 0, 1, 2, 3, 2, 0, 0, 2, 0, 0, 1, 1]
    np.testing.assert_allclose(got_edges, edges, atol=1e-4)
    assert (round(float(lo), 4), round(float(hi), 4), round(float(th), 4)) == (-3.6, 8.7, 9.1071)
    hist, _, lo, hi, _ = hc.hist_dict["relu_output"]
    assert hist.tolist() == [0, 0, 0, 0, 0, 0, 0, 8, 0, 0, 2, 0, 0, 1, 1]
    assert (float(lo), round(float(hi), 4)) == (0.0, 8.7)


def test_collectors_take_str_names_and_ndarray_handles():
    mm = Q._LayerOutputMinMaxCollector("int8", include_layer={"x"})
    arr = mx.nd.array([[-1.5, 2.0]])
    mm.collect("x", ctypes.cast(arr, mx.base.NDArrayHandle))    # what MXNet's callback passes
    mm.collect(b"y", arr)                                       # not included: ignored
    assert mm.min_max_dict == {"x": (-1.5, 2.0)}


def test_load_sym_and_load_params(tmp_path):
    data = mx.sym.var("data")
    net = mx.sym.Activation(mx.sym.FullyConnected(data, num_hidden=3, name="fc"),
                            act_type="relu", name="relu")
    net.save(str(tmp_path / "n-symbol.json"))
    mx.nd.save(str(tmp_path / "n-0000.params"),
               {"arg:fc_weight": mx.nd.array(W), "aux:foo": mx.nd.array(B),
                "arg:fc_bias": mx.nd.array(B)})
    assert Q._load_sym(str(tmp_path / "n-symbol.json")).list_arguments() == [
        "data", "fc_weight", "fc_bias"]
    assert Q._load_sym(net) is net
    with pytest.raises(ValueError, match="_load_sym only accepts Symbol or path"):
        Q._load_sym(3)
    args, auxs = Q._load_params(str(tmp_path / "n-0000.params"))
    assert sorted(args) == ["fc_bias", "fc_weight"] and sorted(auxs) == ["foo"]
    np.testing.assert_array_equal(args["fc_weight"].asnumpy(), W)
    assert Q._load_params(({"a": 1}, {"b": 2})) == ({"a": 1}, {"b": 2})
    with pytest.raises(ValueError, match="Unsupported params provided"):
        Q._load_params(5)


def test_data_iter_wrapper_matches_mxnet():
    batches = [(mx.nd.ones((2, 3)) * i, mx.nd.array([i, i])) for i in range(3)]
    it = Q._DataIterWrapper(batches)
    assert isinstance(it, mx.io.DataIter) and it.batch_size == 2
    assert [(d.name, d.shape) for d in it.provide_data] == [("data", (2, 3)), ("data0", (2,))]
    assert [float(b.data[0].asnumpy()[0, 0]) for b in it] == [0.0, 1.0, 2.0]
    it.reset()
    batch = it.next()
    assert type(batch) is mx.io.DataBatch and len(batch.data) == 2 and batch.label is None
    three = Q._DataIterWrapper([(mx.nd.ones((2, 3)), mx.nd.ones((2, 4)), mx.nd.zeros((2,)))])
    assert [(d.name, d.shape) for d in three.provide_data] == [
        ("data0", (2, 3)), ("data1", (2, 4)), ("data2", (2,))]
    five = Q._DataIterWrapper([[mx.nd.ones((2, 3, 4, 5, 6)), mx.nd.zeros((2,))]])
    assert [(d.name, d.shape) for d in five.provide_data] == [("data", (6, 4, 5, 6)),
                                                              ("data0", (2,))]
    assert five.batch_size == 6 and five.next().data[0].shape == (6, 4, 5, 6)
    assert [(d.name, d.shape) for d in Q._DataIterWrapper([mx.nd.ones((4, 2))]).provide_data] \
        == [("data", (4, 2))]
    with pytest.raises(TypeError, match="calib_data is not a valid iterator"):
        Q._DataIterWrapper(5)
    nd_iter = mx.io.NDArrayIter(np.ones((4, 2)), batch_size=2)
    same, descs = Q._as_data_iter(nd_iter)
    assert same is nd_iter and [(d.name, d.shape) for d in descs] == [("data", (2, 2))]
    wrapped, descs = Q._as_data_iter(batches)
    assert type(wrapped) is Q._DataIterWrapper
    assert [(d.name, d.shape) for d in descs] == [("data", (2, 3)), ("data0", (2,))]
