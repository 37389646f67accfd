"""How many threads gpunda's CPU kernels use, and the one pool they share.

NOTE [CPU threads]
MXNet parallelises every CPU operator with OpenMP; NumPy runs each ufunc on one
thread and leaves only its BLAS (OpenBLAS/MKL) multi-threaded. gpunda follows
MXNet's thread count (src/engine/openmp.cc in 1.9.1):

- ``MXNET_OMP_MAX_THREADS`` set: that many;
- else ``OMP_NUM_THREADS`` set: that many;
- else the CPUs this process may run on, halved on x86 (MXNet takes the
  hyper-threads' siblings out), at least 1.

``set_num_threads(n)`` (MXNet's ``MXSetNumOMPThreads``) changes it at run time.
``MXNET_CPU_WORKER_NTHREADS`` is how many *operators* MXNet's engine runs at once;
gpunda runs operators one after the other on the calling thread (as MXNet's
NaiveEngine), so that knob adds no parallelism here and the count above is the
one that matters.

The count is used twice, both on first use and never by ``import gpunda``:
the BLAS library's own pool is set to it through threadpoolctl (unless the user set
``OPENBLAS_NUM_THREADS``/``MKL_NUM_THREADS``, which the library read itself), and a
pool of ``count - 1`` worker threads runs the heavy non-BLAS kernels in pieces over a
leading axis (batch, channel blocks or a flat range) with the calling thread doing the
first piece. NumPy releases the GIL inside ufuncs, copies and GEMMs, so the pieces
run in parallel. A piece count depends only on the thread count and the work's size,
never on timing, so results are deterministic; kernels that split a reduction say so
where they split it.

Small work does not pay for the hand-off (70-100 us a piece on a loaded 2-CPU
machine): ``pieces()`` gives 1 below ``MIN_ELEMENTS`` elements of work a piece, and
memory-bound passes, which gained nothing on 2 threads, ask for
``STREAM_MIN_ELEMENTS`` (measurements in docs/benchmarks.md, "Many cores").
"""
from __future__ import annotations

import os
import threading

# elements of work below which a piece does not pay for its hand-off to a thread: a
# transcendental ufunc (exp, tanh) gained 1.3x on 2 threads at 256 Ki elements and lost
# below; the hand-off measured 70-100 us on a loaded 2-CPU machine
MIN_ELEMENTS = 1 << 17
# work under this many elements is never split: one compare on a small op's path
SPLIT_MIN = 2 * MIN_ELEMENTS
# pieces of memory-bound passes (BatchNorm's, 2x2 pooling, the optimizer step) move a few
# bytes per element: on 2 threads they gained nothing up to 670 Ki elements (0.8-1.0x),
# so they split only arrays far past a core's share of the cache, where a many-core
# machine's memory bandwidth needs several cores
STREAM_MIN_ELEMENTS = 1 << 22

_lock = threading.Lock()
_count = None           # the thread count, once decided
_pool = None            # concurrent.futures.ThreadPoolExecutor of _count - 1 workers
_pool_size = 0
blas_sized = False      # the BLAS pool was set (or left to the user's variables)
_blas_libs = None       # threadpoolctl's BLAS controllers (their set_num_threads), once found
_local = threading.local()   # .inside: this thread is running a piece


def _env_int(name):
    v = os.environ.get(name)
    if v is None or not v.strip():
        return None
    try:
        n = int(v.split(",")[0])        # OMP_NUM_THREADS may be a list per nesting level
    except ValueError:
        return None
    return n if n > 0 else None


def default_count():
    """The thread count from the environment, by MXNet's rule (NOTE [CPU threads])."""
    for name in ("MXNET_OMP_MAX_THREADS", "OMP_NUM_THREADS"):
        n = _env_int(name)
        if n is not None:
            return n
    try:
        procs = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        procs = os.cpu_count() or 1
    machine = os.uname().machine.lower() if hasattr(os, "uname") else ""
    if machine in ("x86_64", "amd64", "i386", "i686", "x86"):
        procs //= 2
    return max(1, procs)


def num_threads():
    """The number of threads gpunda's CPU kernels use (decided on first call)."""
    global _count
    if _count is None:
        with _lock:
            if _count is None:
                _count = default_count()
        _set_blas()
    return _count


def set_num_threads(n):
    """Use ``n`` threads from now on (the BLAS pool too); MXNet's ``MXSetNumOMPThreads``.

    Args:
        n: a positive int.
    """
    from gpunda.base import GpundaError
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise GpundaError(f"set_num_threads: thread_num must be a positive int, got {n!r}")
    global _count, blas_sized
    with _lock:
        _count = n
        blas_sized = False
    _set_blas(force=True)


def _set_blas(force=False):
    """Give the BLAS pool the thread count, once, unless the user sized it by variable."""
    global blas_sized
    if blas_sized:
        return
    blas_sized = True
    if not force and any(os.environ.get(v) for v in ("OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                                                     "BLIS_NUM_THREADS")):
        return
    for c in _blas_controllers():   # none without threadpoolctl: BLAS keeps what it read
        c.set_num_threads(num_threads())


def _blas_controllers():
    """threadpoolctl's controllers of the loaded BLAS libraries (found once)."""
    global _blas_libs
    if _blas_libs is None:
        try:
            from threadpoolctl import ThreadpoolController
            _blas_libs = [c for c in ThreadpoolController().lib_controllers
                          if c.user_api == "blas"]
        except Exception:       # noqa: BLE001 -- optional; without it BLAS keeps its threads
            _blas_libs = []
    return _blas_libs


def ensure_blas():
    """Size the BLAS pool (once); the GEMM helper calls it until ``blas_sized``."""
    if not blas_sized:
        num_threads()
        _set_blas()


def pieces(n, work, min_elements=None):
    """How many pieces to split ``n`` items of ``work`` elements in total into: 1 when
    threads are off, inside a piece already, or the pieces would be under
    ``min_elements`` (MIN_ELEMENTS) each."""
    t = num_threads()
    if t <= 1 or n <= 1 or getattr(_local, "inside", False):
        return 1
    m = MIN_ELEMENTS if min_elements is None else min_elements
    return int(max(1, min(t, n, work // max(1, m))))


def bounds(n, parts, align=1):
    """``parts`` contiguous ``(lo, hi)`` ranges covering ``range(n)``, each boundary a
    multiple of ``align`` (so chunked kernels see the same chunks as in one piece)."""
    blocks = -(-n // align)
    parts = max(1, min(parts, blocks))
    cuts = [min(n, (blocks * i // parts) * align) for i in range(parts + 1)]
    return [(cuts[i], cuts[i + 1]) for i in range(parts) if cuts[i] < cuts[i + 1]]


def _executor(workers):
    global _pool, _pool_size
    if _pool is None or _pool_size < workers:
        with _lock:
            if _pool is None or _pool_size < workers:
                from concurrent.futures import ThreadPoolExecutor
                old = _pool
                _pool = ThreadPoolExecutor(workers, thread_name_prefix="gpunda-cpu")
                _pool_size = workers
                if old is not None:
                    old.shutdown(wait=False)
    return _pool


def _run_inside(fn, lo, hi):
    _local.inside = True
    try:
        return fn(lo, hi)
    finally:
        _local.inside = False


def run(fn, ranges, blas_serial=False):
    """``[fn(lo, hi) for (lo, hi) in ranges]``, the first range on this thread and the
    others on the pool, results in range order (an exception of any piece is raised
    after all have finished, so no piece still writes when the caller sees it).

    ``blas_serial``: the pieces make GEMMs of their own; BLAS runs each on one thread
    while the pieces run (its pool is process-wide; OpenBLAS would otherwise queue the
    pieces' threaded GEMMs one after another on one lock)."""
    if len(ranges) <= 1:
        return [fn(lo, hi) for lo, hi in ranges]
    pool = _executor(len(ranges) - 1)
    libs = _blas_controllers() if blas_serial else ()
    before = [c.get_num_threads() for c in libs]
    for c in libs:
        c.set_num_threads(1)
    try:
        return _gather(pool, fn, ranges)
    finally:
        for c, n in zip(libs, before):
            c.set_num_threads(n)


def _gather(pool, fn, ranges):
    futs = [pool.submit(_run_inside, fn, lo, hi) for lo, hi in ranges[1:]]
    first, err = None, None
    try:
        first = _run_inside(fn, *ranges[0])
    except BaseException as e:      # noqa: BLE001 -- re-raised once every piece is done
        err = e
    out = [first]
    for f in futs:
        try:
            out.append(f.result())
        except BaseException as e:  # noqa: BLE001
            err = err or e
    if err is not None:
        raise err
    return out


def split(fn, n, work, align=1, min_elements=None, blas_serial=False):
    """Run ``fn(lo, hi)`` over ``range(n)`` in ``pieces(n, work)`` ranges (aligned to
    ``align``); the list of its results in range order."""
    return run(fn, bounds(n, pieces(n, work, min_elements), align), blas_serial)


def rows(fn, n, work):
    """``fn(lo, hi)`` for in-place memory-bound passes over rows ``lo:hi`` of arrays with
    ``n`` rows and ``work`` elements in all, split over the threads when large enough
    (STREAM_MIN_ELEMENTS a piece)."""
    if work < 2 * STREAM_MIN_ELEMENTS:
        fn(0, n)
    else:
        split(fn, n, work, min_elements=STREAM_MIN_ELEMENTS)


def _forget_pool():
    # a forked child (DataLoader workers) has none of the parent's pool threads
    global _pool, _pool_size
    _pool, _pool_size = None, 0
    _local.inside = False


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_pool)


def pool_started():
    """Whether the worker pool exists (tests: ``import gpunda`` must not start it)."""
    return _pool is not None

# rows a piece computes at a time: f's temporaries and the copy into the result stay in
# the L2 cache (elements per step)
_STEP_ELEMENTS = 1 << 15


def elementwise(f, x):
    """``f(x)`` for an elementwise ``f`` of one NumPy array, over pieces of ``x``'s leading
    axis on the threads, each piece in cache-sized steps written into one result (bitwise
    ``f(x)``: every element is computed alone). ``f(x)`` itself when too small to split
    or when ``f`` does not keep the shape."""
    n = x.shape[0] if x.ndim else 0
    k = pieces(n, x.size) if n > 1 else 1
    if k <= 1:
        return f(x)
    head = f(x[:1])
    if getattr(head, "shape", None) != x[:1].shape:
        return f(x)
    import numpy as np
    out = np.empty(x.shape, dtype=head.dtype)
    step = max(1, _STEP_ELEMENTS // max(1, x.size // n))

    def piece(lo, hi):
        for s in range(lo, hi, step):
            e = min(hi, s + step)
            out[s:e] = f(x[s:e])
    run(piece, bounds(n, k))
    return out
