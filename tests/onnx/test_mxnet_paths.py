"""MXNet's ONNX package paths (mx.onnx.mx2onnx.*, mx.contrib.onnx.onnx2mx.*) over gpunda's
exporter and importer: a model round-trips through them, the helpers answer as MXNet's."""
import numpy as np
import pytest

from _onnx_check import onnx  # noqa: F401 -- skips when onnx is not installed

import gpunda as mx
from gpunda.base import GpundaError


def _fc_checkpoint(tmp_path):
    x = mx.sym.var("data")
    y = mx.sym.FullyConnected(x, num_hidden=3, name="fc")
    rs = np.random.RandomState(1)
    args = {"fc_weight": mx.nd.array(rs.uniform(-1, 1, (3, 4))),
            "fc_bias": mx.nd.array(rs.uniform(-1, 1, (3,)))}
    mx.model.save_checkpoint(str(tmp_path / "net"), 7, y, args, {})
    return y, args


def test_export_and_import_through_mxnet_paths(tmp_path):
    from gpunda.onnx.mx2onnx._export_helper import load_module
    from gpunda.onnx.mx2onnx._export_onnx import MXNetGraph
    from gpunda.contrib.onnx.onnx2mx.import_model import import_model, get_model_metadata
    y, args = _fc_checkpoint(tmp_path)
    sym, params = load_module(str(tmp_path / "net-symbol.json"), str(tmp_path / "net-0007.params"))
    assert sorted(params) == ["fc_bias", "fc_weight"]
    path = mx.onnx.mx2onnx.export_model(sym, params, [(2, 4)], np.float32,
                                        str(tmp_path / "m.onnx"))
    graph = MXNetGraph().create_onnx_graph_proto(sym, params, [(2, 4)], np.float32)
    assert [o.name for o in graph.output] == ["fc_output"]
    assert get_model_metadata(path)["input_tensor_data"] == [("data", (2, 4), 1)]
    sym2, arg2, aux2 = import_model(path)
    data = np.arange(8, dtype=np.float32).reshape(2, 4)
    want = data @ args["fc_weight"].asnumpy().T + args["fc_bias"].asnumpy()    # NumPy
    got = sym2.eval(data=mx.nd.array(data), **arg2)[0].asnumpy()
    np.testing.assert_allclose(got, want, rtol=1e-5)
    assert mx.contrib.onnx.import_model_ is mx.contrib.onnx.import_model


def test_load_module_rejects_missing_files(tmp_path):
    from gpunda.onnx.mx2onnx._export_helper import load_module
    with pytest.raises(ValueError, match="invalid"):
        load_module(str(tmp_path / "no-symbol.json"), str(tmp_path / "no-0000.params"))


def test_convert_map_holds_the_translations():
    from gpunda.contrib.onnx.onnx2mx import _import_helper, _op_translations, import_onnx
    assert {"Conv", "Gemm", "Relu"} <= set(_import_helper._convert_map)
    assert _import_helper._convert_map["Conv"] is _op_translations.conv
    assert import_onnx.convert_map is _import_helper._convert_map


def test_helpers_answer_as_mxnet():
    from gpunda.onnx.mx2onnx._op_translations import _op_translations_opset12 as o12
    from gpunda.contrib.onnx.onnx2mx import _translation_utils as tu
    # answers recorded from MXNet 1.9.1
    assert o12.transform_padding([0, 0, 0, 0, 1, 2, 3, 4]) == [0, 0, 1, 3, 0, 0, 2, 4]
    assert o12.parse_helper({"kernel": "(3, 3)"}, "kernel") == (3, 3)
    assert o12.parse_helper({}, "kernel", (1,)) == (1,)
    assert o12.convert_string_to_list("(1, None, 3L)") == [1, None, 3]
    assert o12.get_boolean_attribute_value({"x": "True"}, "x") == 1
    assert tu._pad_sequence_fix((1, 2, 3, 4)) == (1, 3, 2, 4)
    assert tu._pad_sequence_fix((1, 2, 3, 4), 3) == (1, 3, 2, 4, 0, 0)
    assert tu._fix_attribute_names({"a": 1, "b": 2}, {"a": "c"}) == {"c": 1, "b": 2}
    init = []
    o12.create_tensor([1, 2], "t", init)
    assert onnx.numpy_helper.to_array(init[0]).tolist() == [1, 2]


def test_per_op_translations_are_mxnets_convention():
    from gpunda.onnx.mx2onnx._op_translations import _op_translations_opset13 as o13
    from gpunda.contrib.onnx.onnx2mx import _op_translations
    assert o13.OPSET_VERSION == 13
    # answer recorded from MXNet 1.9.1 (tests/onnx/test_onnx2mx_translations.py has them all)
    assert _op_translations.add({}, ["a", "b"], None) == ("broadcast_add", {}, ["a", "b"])
