"""Peak memory of one MLP training step (W3), gpunda next to PyTorch and the NumPy floor.

Each framework runs in its own process: import it, note the resident size, build the
model and warm up, reset the kernel's peak-RSS mark (/proc/self/clear_refs), run 5 steps,
and report the peak RSS during those steps above the size right after the import
(weights, gradients, optimizer state and the step's working memory). Usage: ``python bench/bench_memory.py``.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

CHILD = r'''
import sys
sys.path.insert(0, {root!r})
from bench.frameworks import FRAMEWORKS
def kb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1])
fw = FRAMEWORKS[{fw!r}]() if {fw!r} == "numpy" else FRAMEWORKS[{fw!r}](device="cpu")
base = kb("VmRSS:")          # the framework imported, nothing built yet
step, _ = fw.setup("w3_mlp_step{suffix}")
for _ in range(3):
    step()
with open("/proc/self/clear_refs", "w") as f:
    f.write("5")
for _ in range(5):
    step()
print("PEAK", kb("VmHWM:") - base, base)
'''


def main():
    sys.path.insert(0, ROOT)
    from bench.run import _python_for
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", PYTHONPATH=ROOT)
    rows = {}
    for fw, suffix in (("numpy", ""), ("gpunda", ""), ("gpunda", "_hybrid"), ("torch", "")):
        py, why = _python_for(fw)
        name = fw + suffix
        if py is None:
            rows[name] = why
            continue
        r = subprocess.run([py, "-c", CHILD.format(root=ROOT, fw=fw, suffix=suffix)],
                           capture_output=True, text=True, env=env, timeout=600)
        line = [l for l in r.stdout.splitlines() if l.startswith("PEAK")]
        rows[name] = ({"peak_step_mb": int(line[0].split()[1]) / 1024,
                       "resident_mb": int(line[0].split()[2]) / 1024} if line
                      else f"failed: {r.stderr.strip().splitlines()[-1:]}")
    print("| framework | peak RSS of a training step, above the imported framework | RSS after import |")
    print("|---|---|---|")
    for k, v in rows.items():
        if isinstance(v, dict):
            print(f"| {k} | {v['peak_step_mb']:.1f} MB | {v['resident_mb']:.0f} MB |")
        else:
            print(f"| {k} | {v} | |")
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", "memory.json"), "w") as f:
        json.dump(rows, f, indent=1)


if __name__ == "__main__":
    main()
