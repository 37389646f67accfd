"""Make tests/data/amp_mxnet191.json with real MXNet 1.9.1 (CPU): the results of the cases
of amp_scenarios.py, each run in its own process. Run with MXNet's Python
(/work/mxref/bin/python make_amp_fixture.py)."""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
CASES = ("convert", "hybrid", "bucketing", "nd", "nd_bf16", "sym", "train")

if __name__ == "__main__":
    out = {}
    for case in CASES:
        r = subprocess.run([sys.executable, os.path.join(HERE, "amp_scenarios.py"), "mxnet",
                            case], capture_output=True, text=True, check=True)
        out[case] = json.loads(r.stdout.strip().splitlines()[-1])
    with open(os.path.join(HERE, "amp_mxnet191.json"), "w") as f:
        json.dump(out, f, indent=1, sort_keys=True)
