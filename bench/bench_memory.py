"""Memory of training steps, gpunda next to PyTorch (and the NumPy floor for W3).

1. Peak memory of one MLP training step (W3). Each framework runs in its own process:
   import it, note the resident size, build the model and warm up, reset the kernel's
   peak-RSS mark (/proc/self/clear_refs), run 5 steps, and report the peak RSS during
   those steps above the size right after the import (weights, gradients, optimizer
   state and the step's working memory).
2. Whether memory stays flat over many steps of the CIFAR-style ResNet-20 (W11):
   after 20 warm-up steps the RSS is read every ``--every`` steps up to ``--resnet-steps``
   (1000); the report gives the RSS after warm-up, the growth from there to the last
   reading, and the growth over the second half (a leak grows it, allocator noise does not).

Usage: ``python bench/bench_memory.py [--resnet-steps 1000] [--resnet-batch 8]``
(``--resnet-steps 0`` runs only the W3 table).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# what both child scripts begin with: the checkout on the path, and kb(field), a
# /proc/self/status reading in kB
PROLOGUE = r'''
import sys
sys.path.insert(0, {root!r})
def kb(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1])
'''

CHILD = PROLOGUE + r'''from bench.frameworks import FRAMEWORKS
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

FLAT_CHILD = PROLOGUE + r'''from bench import common as C
from bench.frameworks import FRAMEWORKS
C.RESNET["batch"] = {batch}
step, _ = FRAMEWORKS[{fw!r}](device="cpu").setup("w11_resnet_step{suffix}")
for _ in range(20):
    step()
readings = [(0, kb("VmRSS:"))]
for k in range(1, {steps} + 1):
    loss = step()
    if k % {every} == 0 or k == {steps}:
        float(loss.mean().asscalar() if hasattr(loss, "asscalar") else loss.item())
        readings.append((k, kb("VmRSS:")))
print("RSS", " ".join(f"{{k}}:{{v}}" for k, v in readings))
'''


def _flat_rows(env, steps, every, batch):
    """ResNet-20 RSS readings per framework: {name: {'readings': [(step, MB)], ...}}."""
    from bench.run import _python_for
    rows = {}
    for fw, suffix in (("gpunda", ""), ("gpunda", "_hybrid"), ("torch", "")):
        py, why = _python_for(fw)
        name = fw + suffix
        if py is None:
            rows[name] = why
            continue
        code = FLAT_CHILD.format(root=ROOT, fw=fw, suffix=suffix, steps=steps, every=every,
                                 batch=batch)
        r = subprocess.run([py, "-c", code], capture_output=True, text=True, env=env)
        line = [l for l in r.stdout.splitlines() if l.startswith("RSS")]
        if not line:
            rows[name] = f"failed: {r.stderr.strip().splitlines()[-1:]}"
            continue
        readings = [(int(k), int(v) / 1024) for k, v in
                    (item.split(":") for item in line[0].split()[1:])]
        half = min(readings, key=lambda kv: abs(kv[0] - steps / 2))
        rows[name] = {"readings": readings, "after_warmup_mb": readings[0][1],
                      "growth_mb": readings[-1][1] - readings[0][1],
                      "second_half_growth_mb": readings[-1][1] - half[1]}
    return rows


def _print_flat(rows, steps, batch):
    print(f"\n| W11 ResNet-20, batch {batch}, {steps} steps | RSS after warm-up | growth to the "
          f"last step | growth over the second half |")
    print("|---|---|---|---|")
    for k, v in rows.items():
        if isinstance(v, dict):
            print(f"| {k} | {v['after_warmup_mb']:.0f} MB | {v['growth_mb']:+.1f} MB | "
                  f"{v['second_half_growth_mb']:+.1f} MB |")
        else:
            print(f"| {k} | {v} | | |")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--resnet-steps", type=int, default=1000,
                    help="W11 steps whose RSS is followed (0: skip that part)")
    ap.add_argument("--every", type=int, default=100, help="RSS reading every N steps")
    ap.add_argument("--resnet-batch", type=int, default=8, help="W11 batch for this check")
    args = ap.parse_args(argv)
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
    flat = {}
    if args.resnet_steps > 0:
        flat = _flat_rows(env, args.resnet_steps, max(1, args.every), args.resnet_batch)
        _print_flat(flat, args.resnet_steps, args.resnet_batch)
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", "memory.json"), "w") as f:
        json.dump({**rows, "w11_flat": flat} if flat else rows, f, indent=1)


if __name__ == "__main__":
    main()
