"""The benchmark suite: gpunda against NumPy (the floor), PyTorch, MXNet 1.9.1 and Chainer.

Each framework runs in its own long-lived process (peers in their own virtualenvs,
made by ``bench/make_peer_venvs.sh``). Rounds interleave the frameworks block by
block, after a warm-up; each figure is the median of the blocks with min-max.
BLAS threads are pinned (``--threads``, default 1) and recorded with
threadpoolctl; OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE are recorded and can be unset
for every process alike (``--unset-openblas-hints``). Blocks are timed by each
worker's CPU time on ``--device cpu`` (other work on a shared machine disturbs
it least) and by wall time on a GPU. Ratios to NumPy are the median of the
ratios within each round. Usage: ``python -m bench [--cases w1,w3] [--frameworks numpy,gpunda]``.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT))

from bench.common import CASES, GPUNDA_TARGETS, PER_UNIT  # noqa: E402

ALL_FWS = ["numpy", "gpunda", "torch", "mxnet", "chainer"]
HINTS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")


def _python_for(fw):
    """(python executable, or None, and why) for a framework."""
    if fw in ("numpy", "gpunda"):
        return sys.executable, ""
    venv = HERE / ".venvs" / fw / "bin" / "python"
    if venv.exists() and not (HERE / ".venvs" / fw / ".failed").exists():
        return str(venv), ""
    try:
        __import__(fw)
        return sys.executable, ""
    except Exception:   # noqa: BLE001
        return None, f"missing: no bench/.venvs/{fw} (run bash bench/make_peer_venvs.sh {fw})"


def _matches(case, prefix):
    """``prefix`` selects ``case`` ('w1' selects w1_add_1 but not w10_fit_module)."""
    return case.startswith(prefix) and not case[len(prefix):len(prefix) + 1].isdigit()


class Worker:
    """A framework's worker process, spoken to line by line."""

    def __init__(self, fw, device, threads, env):
        self.fw = fw
        py, why = _python_for(fw)
        self.missing = why
        self.proc = None
        self.hello = {}
        if py is None:
            return
        self.proc = subprocess.Popen([py, str(HERE / "worker.py"), fw, device, str(threads)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, text=True, env=env, cwd=str(ROOT))
        line = self.proc.stdout.readline()
        if not line:
            self.missing = "missing: worker died at start"
            self.proc = None
            return
        self.hello = json.loads(line)
        if "error" in self.hello:
            self.missing = f"missing: {self.hello['error']}"

    def ask(self, **msg):
        self.proc.stdin.write(json.dumps(msg) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            return {"error": "worker died"}
        return json.loads(line)

    def close(self):
        if self.proc is not None:
            try:
                self.ask(cmd="quit")
            except Exception:   # noqa: BLE001
                pass
            self.proc.kill()


def _check(ref, got):
    if ref is None or got is None:
        return "n/a"
    if ref["shape"] != got["shape"]:
        return f"shape {got['shape']} != {ref['shape']}"
    import math
    scale = max(ref["absmax"], 1e-6)
    for a, b in zip(ref["head"], got["head"]):
        if not math.isclose(a, b, rel_tol=2e-3, abs_tol=2e-3 * scale):
            return f"value {b:.6g} != {a:.6g}"
    if not math.isclose(ref["sum"], got["sum"], rel_tol=2e-3, abs_tol=2e-3 * scale * 10):
        return f"sum {got['sum']:.6g} != {ref['sum']:.6g}"
    return "ok"


def import_and_size(fws, env):
    """W6: median import time (s) of each framework and its package's size on disk (MB)."""
    out = {}
    env = dict(env)
    # installed packages carry compiled bytecode; let gpunda's (editable) sources get theirs
    # too, or the import would include compiling every module each time
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    for fw in fws:
        py, why = _python_for(fw)
        if py is None:
            out[fw] = {"missing": why}
            continue
        code = ("import time,sys,os;t=time.perf_counter();import {m} as m;d=time.perf_counter()-t;"
                "p=os.path.dirname(m.__file__);s=sum(os.path.getsize(os.path.join(r,f)) for r,_,fs "
                "in os.walk(p) for f in fs);print(d, s)").format(m=fw)
        times, size = [], None
        subprocess.run([py, "-c", f"import {fw}"], capture_output=True, env=env, cwd=str(ROOT))
        for _ in range(5):
            r = subprocess.run([py, "-c", code], capture_output=True, text=True, env=env, cwd=str(ROOT))
            if r.returncode != 0:
                out[fw] = {"missing": r.stderr.strip().splitlines()[-1] if r.stderr else "failed"}
                break
            t, size = r.stdout.split()
            times.append(float(t))
        else:
            out[fw] = {"import_s": statistics.median(times), "size_mb": int(size) / 1e6}
    return out


def _thread_env(env, threads):
    """``env`` with every BLAS/OpenMP thread variable at ``threads``."""
    env = dict(env)
    for k in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMEXPR_NUM_THREADS",
              "VECLIB_MAXIMUM_THREADS"):
        env[k] = str(threads)
    return env


def run(args):
    env = dict(os.environ)
    hints = {k: os.environ.get(k) for k in HINTS}
    if args.unset_openblas_hints:
        for k in HINTS:
            env.pop(k, None)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    cases = [c for c in CASES if any(_matches(c, p) for p in args.cases)]
    # one worker per framework and thread count ("gpunda@2" when several counts are
    # measured); their blocks interleave in every round like those of frameworks
    workers = {}
    for fw in args.frameworks:
        for t in args.threads:
            label = fw if len(args.threads) == 1 else f"{fw}@{t}"
            workers[label] = Worker(fw, args.device, t, _thread_env(env, t))
    fws = list(workers)
    results = {"cases": {}, "frameworks": {}, "meta": {}}
    try:
        for fw, w in workers.items():
            results["frameworks"][fw] = w.hello if not w.missing else {"missing": w.missing}
            print(f"  {fw:8s} {w.missing or w.hello.get('version')}", file=sys.stderr)
        plan = {}
        numpy_checks = {}
        for case in cases:
            results["cases"][case] = {"desc": CASES[case][1], "workload": CASES[case][0], "fw": {}}
            checks = {}
            for fw, w in workers.items():
                entry = results["cases"][case]["fw"].setdefault(fw, {})
                if w.missing:
                    entry["missing"] = w.missing
                    continue
                r = w.ask(cmd="setup", case=case)
                if "unavailable" in r or "error" in r:
                    entry["missing"] = r.get("unavailable") or r.get("error")
                    continue
                checks[fw] = r.get("check")
                # calibrate the block size so one block takes about --block-seconds
                n, t = 1, 0.0
                while True:
                    t = w.ask(cmd="time", case=case, number=n).get("sec_per_call", 1.0) * n
                    if t >= args.block_seconds / 4 or n >= 1 << 20:
                        break
                    n *= 4
                plan[(case, fw)] = max(1, int(n * args.block_seconds / max(t, 1e-9)))
                entry["times"] = []
            ref = checks.get("numpy")
            numpy_checks[case] = ref
            for suffix in ("_cached", "_hybrid"):
                if ref is None and case.endswith(suffix):
                    ref = numpy_checks.get(case[:-len(suffix)])
            for fw, chk in checks.items():
                if fw != "numpy":
                    results["cases"][case]["fw"][fw]["check"] = _check(ref, chk)
        for rnd in range(args.rounds):
            for case in cases:
                order = [fw for fw in fws if (case, fw) in plan]
                random.Random(rnd * 7919 + hash(case) % 1000).shuffle(order)
                for fw in order:
                    r = workers[fw].ask(cmd="time", case=case, number=plan[(case, fw)])
                    if "sec_per_call" in r:
                        results["cases"][case]["fw"][fw]["times"].append(
                            r["cpu_per_call"] if args.clock == "cpu" else r["sec_per_call"])
            print(f"  round {rnd + 1}/{args.rounds} done", file=sys.stderr)
    finally:
        for w in workers.values():
            w.close()
    for case, c in results["cases"].items():
        unit = PER_UNIT.get(case, 1)
        for fw, e in c["fw"].items():
            ts = [t / unit for t in e.get("times", [])]
            if ts:
                e.update(median=statistics.median(ts), min=min(ts), max=max(ts), blocks=len(ts))
        base = c["fw"].get("numpy", {}).get("median")
        if base is None:    # a compiled/cached variant is compared with the same floor
            for suffix in ("_cached", "_hybrid"):
                if case.endswith(suffix) and case[:-len(suffix)] in results["cases"]:
                    base = results["cases"][case[:-len(suffix)]]["fw"].get("numpy", {}).get("median")
        c["floor"] = base
        g = c["fw"].get("gpunda", {}).get("median")
        np_times = c["fw"].get("numpy", {}).get("times", [])
        for fw, e in c["fw"].items():
            if "median" in e:
                if base:
                    e["vs_numpy"] = e["median"] / base
                ts = e.get("times", [])
                if fw != "numpy" and ts and len(ts) == len(np_times):
                    # the median of the ratios within each round: the two blocks ran
                    # seconds apart, so a slow spell of the machine cancels out
                    e["vs_numpy"] = statistics.median(t / b for t, b in zip(ts, np_times))
                if g:
                    e["gpunda_vs_this"] = g / e["median"]
    if "w6" in args.cases:
        results["w6_import_size"] = import_and_size(args.frameworks,
                                                    _thread_env(env, args.threads[0]))
    results["meta"] = {
        "date": datetime.datetime.now().isoformat(timespec="seconds"),
        "machine": _machine(), "device": args.device,
        "threads": args.threads[0] if len(args.threads) == 1 else args.threads,
        "openblas_hints": hints, "openblas_hints_unset": args.unset_openblas_hints,
        "rounds": args.rounds, "block_seconds": args.block_seconds, "clock": args.clock,
        "python": platform.python_version(),
    }
    return results


def _machine():
    model = platform.processor()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cores, {platform.system()} {platform.machine()}"


def _fmt(t):
    if t is None:
        return "-"
    for unit, f in (("s", 1), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if t >= f:
            return f"{t / f:.3g} {unit}"
    return f"{t:.3g} s"


def to_markdown(res):
    fws = list(res["frameworks"])
    lines = ["| case | " + " | ".join(fws) + " | gpunda / numpy |",
             "|---|" + "---|" * (len(fws) + 1)]
    for case, c in res["cases"].items():
        cells = []
        for fw in fws:
            e = c["fw"].get(fw, {})
            if "median" in e:
                chk = e.get("check", "n/a")
                mark = "" if chk in ("ok", "n/a") else " (check: " + chk + ")"
                cells.append(f"{_fmt(e['median'])} [{_fmt(e['min'])}-{_fmt(e['max'])}]{mark}")
            else:
                cells.append("missing" if "missing" in e else "-")
        ratio = c["fw"].get("gpunda", {}).get("vs_numpy")
        lines.append(f"| {case}: {c['desc']} | " + " | ".join(cells) +
                     f" | {ratio:.2f}x |" if ratio else f"| {case}: {c['desc']} | " +
                     " | ".join(cells) + " | - |")
    targets = []
    for (case, ref), limit in GPUNDA_TARGETS.items():
        a = res["cases"].get(case, {}).get("fw", {}).get("gpunda", {}).get("median")
        b = res["cases"].get(ref, {}).get("fw", {}).get("gpunda", {}).get("median")
        if a and b:
            targets.append(f"- gpunda {case} / {ref}: {a / b:.2f}x (target <= {limit}x: "
                           f"{'met' if a / b <= limit else 'NOT met'})")
    if targets:
        lines += [""] + targets
    lines += _speedups(res)
    missing = {fw: v["missing"] for fw, v in res["frameworks"].items() if "missing" in v}
    if missing:
        lines.append("")
        lines += [f"- {fw}: {why}" for fw, why in missing.items()]
    if "w6_import_size" in res:
        lines += ["", "| framework | import time | package size |", "|---|---|---|"]
        for fw, e in res["w6_import_size"].items():
            if "missing" in e:
                lines.append(f"| {fw} | missing | {e['missing']} |")
            else:
                lines.append(f"| {fw} | {_fmt(e['import_s'])} | {e['size_mb']:.1f} MB |")
    return "\n".join(lines)


def _speedups(res):
    """Where several thread counts ran: each framework's speed-up over its own time at
    the smallest count (the ratio of the medians), one row per case."""
    counts = sorted({int(fw.split("@")[1]) for fw in res["frameworks"] if "@" in fw})
    if len(counts) < 2:
        return []
    names = list(dict.fromkeys(fw.split("@")[0] for fw in res["frameworks"] if "@" in fw))
    cols = [(n, t) for n in names for t in counts[1:]]
    lines = ["", f"Speed-up over {counts[0]} thread(s) (median time at {counts[0]} / median "
             "at n; 1.00x: no gain):", "",
             "| case | " + " | ".join(f"{n} @{t}" for n, t in cols) + " |",
             "|---|" + "---|" * len(cols)]
    for case, c in res["cases"].items():
        cells = []
        for n, t in cols:
            base = c["fw"].get(f"{n}@{counts[0]}", {}).get("median")
            cur = c["fw"].get(f"{n}@{t}", {}).get("median")
            cells.append(f"{base / cur:.2f}x" if base and cur else "-")
        lines.append(f"| {case} | " + " | ".join(cells) + " |")
    return lines


def charts(res, outdir):
    """One PNG per workload: each framework's time relative to the NumPy floor."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception:   # noqa: BLE001 -- matplotlib is in the optional 'bench' extra
        return []
    files = []
    by_w = {}
    for case, c in res["cases"].items():
        by_w.setdefault(c["workload"], []).append((case, c))
    for w, items in sorted(by_w.items()):
        fws = [fw for fw in res["frameworks"]
               if any("median" in c["fw"].get(fw, {}) for _, c in items)]
        if not fws:
            continue
        fig, ax = plt.subplots(figsize=(1.8 + 1.4 * len(items) * max(1, len(fws)) / 3, 3.2))
        width = 0.8 / len(fws)
        for j, fw in enumerate(fws):
            vals = []
            for _, c in items:
                e = c["fw"].get(fw, {})
                base = c.get("floor") or c["fw"].get("gpunda", {}).get("median")
                vals.append(e["median"] / base if "median" in e and base else 0)
            ax.bar([i + j * width for i in range(len(items))], vals, width, label=fw)
        ax.set_xticks([i + 0.4 - width / 2 for i in range(len(items))])
        ax.set_xticklabels([case for case, _ in items], rotation=15, fontsize=7)
        ax.set_ylabel("time / floor (lower is better)")
        ax.set_title(f"{w} ({res['meta']['device']})")
        ax.legend(fontsize=7)
        fig.tight_layout()
        path = Path(outdir) / f"{w}.png"
        fig.savefig(path, dpi=110)
        plt.close(fig)
        files.append(path)
    return files


def main(argv=None):
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    ap.add_argument("--frameworks", default=",".join(ALL_FWS))
    ap.add_argument("--cases", default="w1,w2,w3,w4,w5,w6,w7,w8,w9,w10,w11,w12",
                    help="comma-separated prefixes of case names (w1, w3_mlp, ...)")
    ap.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    ap.add_argument("--threads", default="1",
                    help="BLAS/OpenMP threads per process (OMP_NUM_THREADS and the BLAS "
                         "variables; torch.set_num_threads); a list such as 1,2 measures each "
                         "framework at each count, interleaved, and adds the speed-ups")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--clock", choices=["cpu", "wall"], default=None,
                    help="time blocks by each worker's CPU time (default on --device cpu) or by "
                         "wall time (default on --device gpu, where the device does the work)")
    ap.add_argument("--block-seconds", type=float, default=0.15)
    ap.add_argument("--unset-openblas-hints", action="store_true",
                    help="unset OPENBLAS_CORETYPE/OPENBLAS_L2_SIZE in every process")
    ap.add_argument("--out", default=str(HERE / "results"))
    ap.add_argument("--publish", action="store_true", help="write docs/benchmarks.md")
    args = ap.parse_args(argv)
    args.threads = [int(t) for t in str(args.threads).split(",") if t]
    if args.clock is None:
        # CPU time adds up every thread's: scaling over threads needs wall time
        args.clock = "cpu" if args.device == "cpu" and args.threads == [1] else "wall"
    args.frameworks = [f for f in args.frameworks.split(",") if f]
    args.cases = [c for c in args.cases.split(",") if c]
    t0 = time.time()
    res = run(args)
    outdir = Path(args.out)
    outdir.mkdir(parents=True, exist_ok=True)
    (outdir / "results.json").write_text(json.dumps(res, indent=1))
    md = to_markdown(res)
    (outdir / "results.md").write_text(md + "\n")
    pngs = charts(res, outdir)
    print(md)
    print(f"\n(results in {outdir}, {time.time() - t0:.0f} s)")
    if args.publish:
        publish(res, md, pngs)
    return 0


def publish(res, md, pngs):
    docs = ROOT / "docs"
    (docs / "bench").mkdir(parents=True, exist_ok=True)
    links = []
    for p in pngs:
        dest = docs / "bench" / f"{res['meta']['device']}-{p.name}"
        dest.write_bytes(Path(p).read_bytes())
        links.append(f"![{p.stem}](bench/{dest.name})")
    m = res["meta"]
    vers = ", ".join(f"{fw} {v.get('version', '?')}" for fw, v in res["frameworks"].items()
                     if "missing" not in v)
    section = (f"## {m['device'].upper()} run of {m['date']}\n\n"
               f"Machine: {m['machine']}. Python {m['python']}. Versions: {vers}.\n"
               f"BLAS threads per process: {m['threads']}. OpenBLAS hints: {m['openblas_hints']}"
               f"{' (unset for this run)' if m['openblas_hints_unset'] else ''}. "
               f"{m['rounds']} interleaved rounds, {m.get('clock', 'wall')} time; median [min-max] "
               f"of the blocks; ratios are medians of per-round ratios.\n\n"
               + md + "\n\n" + "\n".join(links) + "\n")
    path = docs / "benchmarks.md"
    head = "# gpunda benchmarks\n\nGenerated by `python -m bench --publish`; see bench/run.py.\n\n"
    old = path.read_text() if path.exists() else head
    marker = f"<!-- {m['device']} -->"
    if marker in old:
        before, _, rest = old.partition(marker)
        after = rest.split("<!-- end -->", 1)[1] if "<!-- end -->" in rest else ""
        new = before + marker + "\n" + section + "<!-- end -->" + after
    else:
        new = old.rstrip() + "\n\n" + marker + "\n" + section + "<!-- end -->\n"
    path.write_text(new)


if __name__ == "__main__":
    sys.exit(main())
