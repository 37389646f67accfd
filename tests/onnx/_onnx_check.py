"""Shared by the ONNX tests: export, run in ONNX Runtime, import back, compare."""
import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

import gpunda as mx  # noqa: E402

RTOL, ATOL = 1e-4, 1e-5


def run_ort(path, feed):
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    return sess.run(None, feed)


def run_imported(path, feed):
    sym, args, auxs = mx.contrib.onnx.import_model(str(path))
    inputs = dict(args)
    inputs.update({k: mx.nd.array(v, dtype=v.dtype) for k, v in feed.items()})
    ex = sym.bind(mx.cpu(), inputs, aux_states=auxs, grad_req="null")
    return [o.asnumpy() for o in ex.forward(is_train=False)]


def check_all(path, feed, expected):
    """ONNX Runtime and the re-imported model both give ``expected`` on ``feed``."""
    for where, outs in (("onnxruntime", run_ort(path, feed)),
                        ("import_model", run_imported(path, feed))):
        assert len(outs) == len(expected), where
        for k, (got, want) in enumerate(zip(outs, expected)):
            assert got.shape == want.shape, (where, k, got.shape, want.shape)
            np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL,
                                       err_msg=f"{where}, output {k}")


def model_at(graph, opset):
    """A model of ``graph`` at ``opset`` with the IR version that opset needs, as gpunda's
    exporter writes it: ONNX Runtime 1.23 (the last for Python 3.10) refuses the newest onnx's
    default IR version."""
    from onnx import helper
    opsets = [helper.make_opsetid("", opset)]
    return helper.make_model(graph, opset_imports=opsets,
                             ir_version=helper.find_min_ir_version_for(opsets, ignore_unknown=True))
