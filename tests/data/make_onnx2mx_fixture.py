"""Make tests/data/onnx2mx_mxnet191.json with real MXNet 1.9.1: for every case of
onnx2mx_scenarios.py, what MXNet's translation function returns and what the model
imported by MXNet's GraphProto computes; and the _translation_utils helpers' answers.
Run with MXNet's Python (/work/mxref/bin/python make_onnx2mx_fixture.py)."""
import json
import os
import sys
import warnings

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

if __name__ == "__main__":
    warnings.simplefilter("ignore")
    import mxnet as mx
    import onnx2mx_scenarios as sc
    out = {"cases": {}, "helpers": sc.helpers(mx)}
    for case in sc.CASES:
        out["cases"][case["id"]] = {"translate": sc.translate(mx, case),
                                    "evaluate": sc.evaluate(mx, case)}
    with open(os.path.join(HERE, "onnx2mx_mxnet191.json"), "w") as f:
        json.dump(out, f, indent=None, sort_keys=True)
        f.write("\n")
