"""A long-lived benchmark worker for one framework, driven over stdin/stdout.

Commands (one JSON object per line): {"cmd": "setup", "case": C} -> check value;
{"cmd": "time", "case": C, "number": N} -> seconds per call for one block of N
calls. Keeping the process alive lets the driver interleave frameworks block
by block without paying start-up each time.
"""
from __future__ import annotations

import json
import os
import sys
import time
import traceback


def _threads_info():
    try:
        from threadpoolctl import threadpool_info
        return [{k: d.get(k) for k in ("internal_api", "num_threads", "version", "architecture")}
                for d in threadpool_info()]
    except Exception as e:   # noqa: BLE001 -- threadpoolctl is optional in a peer venv
        return [{"error": f"threadpoolctl unavailable: {e}"}]


def main():
    fw_name, device, threads = sys.argv[1], sys.argv[2], int(sys.argv[3])
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from bench.frameworks import FRAMEWORKS, Unavailable
    out = sys.stdout
    sys.stdout = sys.stderr      # keep the protocol channel clean of library prints
    cls = FRAMEWORKS[fw_name]
    hello = {"framework": fw_name, "python": sys.version.split()[0]}
    try:
        kw = {}
        if fw_name != "numpy":
            kw["device"] = device
        if fw_name == "torch":
            kw["threads"] = threads
        fw = cls(**kw)
        mod = {"numpy": "numpy", "gpunda": "gpunda", "torch": "torch", "mxnet": "mxnet",
               "chainer": "chainer"}[fw_name]
        hello["version"] = __import__(mod).__version__
        import numpy
        hello["numpy"] = numpy.__version__
        hello["threads"] = _threads_info()
    except Exception as e:   # noqa: BLE001
        hello["error"] = f"{type(e).__name__}: {e}"
        fw = None
    out.write(json.dumps(hello) + "\n")
    out.flush()
    steps = {}
    for line in sys.stdin:
        msg = json.loads(line)
        case = msg.get("case")
        reply = {"case": case}
        try:
            if fw is None:
                raise Unavailable(hello["error"])
            if msg["cmd"] == "setup":
                step, check = fw.setup(case)
                steps[case] = step
                for _ in range(3):        # warm-up: compile, allocate, capture
                    step()
                fw.sync()
                reply["check"] = None if check is None else _tolist(check)
            elif msg["cmd"] == "time":
                step, n = steps[case], int(msg["number"])
                fw.sync()
                t0, c0 = time.perf_counter(), time.process_time()
                for _ in range(n):
                    step()
                fw.sync()
                reply["sec_per_call"] = (time.perf_counter() - t0) / n
                # this process's CPU time: what other work on a shared machine disturbs least
                reply["cpu_per_call"] = (time.process_time() - c0) / n
            elif msg["cmd"] == "quit":
                break
        except Unavailable as e:
            reply["unavailable"] = str(e)
        except Exception as e:   # noqa: BLE001 -- reported, the run goes on
            reply["error"] = f"{type(e).__name__}: {e}"
            reply["trace"] = traceback.format_exc()[-1500:]
        out.write(json.dumps(reply) + "\n")
        out.flush()


def _tolist(x):
    import numpy as np
    a = np.asarray(x, dtype=np.float64)
    return {"shape": list(a.shape), "sum": float(a.sum()), "head": a.reshape(-1)[:64].tolist(),
            "absmax": float(abs(a).max()) if a.size else 0.0}


if __name__ == "__main__":
    main()
