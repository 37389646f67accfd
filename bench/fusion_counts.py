"""Kernels per training step, fused against unfused (the fusion pass; counted on the CPU).

Plan counts (``gpunda._engine.fusion.kernel_counts``): one kernel per op forward and one
per op gradient backward (plus one sum per broadcast input's gradient), a GEMM op its
bias add and one GEMM or bias sum per input gradient, a fused group one kernel each way,
a view step no kernel unless it must copy (docs/benchmarks.md defines it). No GPU is
needed: the figure comes from the partition and shape inference of the hybridized graph.
``--kinds`` lists the fused training step's kernels by op kind.

With ``--launches`` (needs CuPy importable, for the test stand-in GPU) it also runs one
training step of each model, at small sizes with the same structure, on the stand-in
gpu(0) and counts what the step asks CuPy for: every array operation and every kernel
launch of a generated kernel, fused (MXNET_USE_FUSION on) against unfused; and the kernel
launches among them: the same less the calls that launch nothing on a GPU: views
(reshape, transpose, swapaxes, broadcast_to), the allocator (``cupy.empty``) and no-op
conversions (``astype`` to the array's dtype with ``copy=False``, ``ascontiguousarray`` of a
C-contiguous array, ``asarray`` of a device array of the dtype asked for).

    python bench/fusion_counts.py [--launches] [--kinds]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import gpunda as mx  # noqa: E402
from gpunda._engine import fusion  # noqa: E402
from gpunda._testing.fusion_models import BertEncoder, LSTMLM, symbol_of  # noqa: E402


def models(small=False):
    """(name, block, input shapes, token inputs?) of the counted graphs."""
    from gpunda.gluon.model_zoo import vision
    if small:
        return [("ResNet-50 v1", vision.resnet50_v1(classes=10), [(2, 3, 32, 32)], False),
                ("BERT-base-shaped encoder", BertEncoder(vocab=50, layers=12, units=16,
                                                         hidden=32, heads=2, max_len=8),
                 [(2, 8)] * 3, True),
                ("LSTM LM (LSTMCell x35)", LSTMLM(vocab=30, units=8, steps=35), [(2, 35)],
                 True)]
    return [("ResNet-50 v1", vision.resnet50_v1(), [(32, 3, 224, 224)], False),
            ("BERT-base-shaped encoder", BertEncoder(), [(8, 128)] * 3, True),
            ("LSTM LM (LSTMCell x35)", LSTMLM(), [(32, 35)], True)]


def plan_counts():
    rows = []
    for name, block, shapes, _ in models():
        names = [f"in{k}" for k in range(len(shapes))]
        s = symbol_of(block, *names)
        given = dict(zip(names, shapes))
        for train in (True, False):
            c = fusion.kernel_counts(s, given, {}, train=train)
            rows.append((name, "train" if train else "predict", c))
    return rows


# calls that make a view or only allocate: CuPy launches nothing for them
_NO_KERNEL = ("cupy.ndarray.reshape", "cupy.empty", "cupy.transpose", "cupy.ndarray.transpose",
              "cupy.swapaxes", "cupy.ndarray.swapaxes", "cupy.broadcast_to")


def _launches(where, args, kwargs):
    """Whether CuPy call ``where`` (stand-in arguments) launches a kernel on a GPU."""
    import numpy as np
    if where in _NO_KERNEL:
        return False
    if where == "cupy.asarray":
        # a device array of the dtype asked for comes back as it is
        a = args[0] if args else None
        dt = args[1] if len(args) > 1 else kwargs.get("dtype")
        return not (hasattr(a, "_a") and (dt is None or np.dtype(dt) == a._a.dtype)
                    and set(kwargs) <= {"dtype"})
    if where == "cupy.ndarray.astype":
        dt = args[1] if len(args) > 1 else kwargs.get("dtype")
        return not (np.dtype(dt) == args[0]._a.dtype and kwargs.get("copy", True) is False)
    if where == "cupy.ascontiguousarray":
        return not (len(args) == 1 and not kwargs and args[0]._a.flags.c_contiguous)
    return True


def launch_counts():
    """(name, CuPy calls unfused, fused, kernel launches unfused, fused) of one training
    step on the stand-in gpu(0)."""
    import numpy as np
    from gpunda import autograd
    from gpunda.backends import _standin, _standin_array
    counter = {"n": 0, "k": 0}
    orig_call = _standin_array._call

    def counting(fn, args, kwargs, where, *a, **k):
        counter["n"] += 1
        counter["k"] += _launches(where, args, kwargs)
        return orig_call(fn, args, kwargs, where, *a, **k)
    raw_get = _standin._RawModule.get_function

    def get_function(self, name):
        fn = raw_get(self, name)

        def launch(*a, **k):
            counter["n"] += 1
            counter["k"] += 1
            return fn(*a, **k)
        return launch
    rows = []
    with _standin.enabled():
        # _standin.py imported _call by name: count through both modules
        _standin_array._call = _standin._call = counting
        _standin._RawModule.get_function = get_function
        try:
            ctx = mx.gpu(0)
            for name, block, shapes, tokens in models(small=True):
                block.initialize(mx.init.Xavier(), ctx=ctx)
                block.hybridize(static_alloc=True)
                rs = np.random.RandomState(0)
                data = [mx.nd.array(rs.randint(0, 2, sh) if tokens else rs.randn(*sh),
                                    ctx=ctx) for sh in shapes]
                got, kern = [], []
                for on in (False, True):
                    fusion.ENABLED = on
                    block._cached_op = None     # a fresh CachedOp for each setting
                    for _ in range(2):          # the first step builds plans and kernels
                        counter["n"] = counter["k"] = 0
                        with autograd.record():
                            out = block(*data)
                        out.backward()
                        mx.nd.waitall()
                    got.append(counter["n"])
                    kern.append(counter["k"])
                rows.append((name, got[0], got[1], kern[0], kern[1]))
        finally:
            _standin_array._call = _standin._call = orig_call
            _standin._RawModule.get_function = raw_get
            fusion.ENABLED = True
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--launches", action="store_true",
                    help="also count CuPy calls per step on the stand-in GPU")
    ap.add_argument("--kinds", action="store_true",
                    help="also list the fused training step's kernels by op kind")
    args = ap.parse_args(argv)
    print("kernels from the plan, unfused -> fused (ratio); training step = forward + "
          "backward in training mode; inference = forward in predict mode")
    print(f"{'graph':28} {'training step':>22} groups {'inference forward':>22} groups")
    rows = plan_counts()
    for (name, _, t), (_, _, p) in zip(rows[::2], rows[1::2]):
        (su, sf), (fu, ff) = t["step"], p["forward"]
        print(f"{name:28} {su:>6} -> {sf:<5} {su / sf:4.2f}x {t['groups']:>6} "
              f"{fu:>6} -> {ff:<5} {fu / ff:4.2f}x {p['groups']:>6}")
    if args.kinds:
        for name, _, t in rows[::2]:
            print(f"\n{name}: fused training step by kind")
            for d in ("forward", "backward"):
                kinds = ", ".join(f"{k} {n}" for k, n in t["by_kind"][d].items())
                print(f"  {d} {sum(t['by_kind'][d].values())}: {kinds}")
    if args.launches:
        print("\nPer training step on the stand-in gpu(0) (small sizes, same structure): "
              "CuPy calls; kernel launches (less views, allocations, no-op conversions)")
        for name, u, f, ku, kf in launch_counts():
            print(f"{name:28} {u:>6} -> {f:<6} {u / f:4.2f}x   {ku:>6} -> {kf:<6} "
                  f"{ku / kf:4.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
