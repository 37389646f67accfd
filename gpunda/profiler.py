"""MXNet's ``mx.profiler``: per-op timings, a chrome://tracing file, aggregate tables.

    mx.profiler.set_config(filename="trace.json", aggregate_stats=True)
    mx.profiler.set_state("run")
    ...                                   # every op run is timed
    mx.profiler.set_state("stop")
    print(mx.profiler.dumps())            # per-op Count / Total / Min / Max / Avg (ms)
    mx.profiler.dump()                    # trace.json: {"traceEvents": [...], "displayTimeUnit": "ms"}

How it hooks in: while it runs, each op's ``OpDef.compute`` is swapped for a
timing wrapper, and the places that hold a compute directly (the NDArray
operator closures, CachedOp plan steps) are pointed at it (NOTE [Swapping
computes] in _engine/imperative.py). Stopping or pausing puts the original functions
back, so a profiler that is off costs nothing per op. On a GPU the wrapper
waits for the op's kernels, so times are device times, not launch times.
The trace uses MXNet's event kinds: ops "B"/"E" in category "operator",
Tasks "b"/"e", Frames "("/")", Events "B"/"E", Counters "C", Markers "n".
With ``profile_memory`` the bytes held by op outputs are counted per device
("Memory: cpu/0" counters, category "Device Storage"; released when the array
is freed). C-API records (``profile_api``) have no counterpart in gpunda: the
option is accepted and records nothing.
"""
from __future__ import annotations

import atexit
import json
import os
import threading
import time
import warnings
import weakref

from gpunda.base import GpundaError
from gpunda._core import hooks
from gpunda.base import c_str, c_str_array, check_call, py_str  # noqa: F401  (MXNet's module has them)

__all__ = ["set_config", "set_state", "dump", "dumps", "pause", "resume", "Domain", "Task",
           "Frame", "Event", "Counter", "Marker", "scope", "profiler_set_config",
           "profiler_set_state", "dump_profile", "set_kvstore_handle"]

_DEFAULTS = {"profile_all": False, "profile_symbolic": True, "profile_imperative": True,
             "profile_memory": True, "profile_api": True, "filename": "profile.json",
             "continuous_dump": True, "dump_period": 1.0, "aggregate_stats": False,
             "profile_process": "worker"}
_BOOL_KEYS = {k for k, v in _DEFAULTS.items() if isinstance(v, bool)}


class _State:
    def __init__(self):
        self.config = dict(_DEFAULTS)
        self.running = False
        self.paused = False
        self.events = []            # chrome-trace event dicts, in order
        self.stats = {}             # category -> name -> [count, total_ms, min_ms, max_ms]
        self.devices = {}           # device label -> pid
        self.lock = threading.RLock()   # re-entrant: GC finalizers may update memory counters
        self.mem = {}               # device label -> bytes held by op outputs seen
        self.mem_stats = {}         # "Memory: <dev>" -> [count, min, max, sum] in bytes
        self.hooked = False
        self.undumped = False


_s = _State()


# -- configuration and state ----------------------------------------------------------
def _parse_bool(key, v):
    if isinstance(v, bool):
        return v
    if isinstance(v, (int, float)) and v in (0, 1):
        return bool(v)
    if isinstance(v, str) and v.lower() in ("true", "false", "1", "0"):
        return v.lower() in ("true", "1")
    raise GpundaError(f"profiler.set_config: {key}={v!r} must be a boolean")


def set_config(**kwargs):
    """Configure the profiler (keywords only); options not given take MXNet's defaults.

    Args:
        filename: trace file ``dump()`` writes (default ``profile.json``).
        profile_all: profile everything.
        profile_symbolic: time ops run inside CachedOp / Executor plans.
        profile_imperative: time ops called one by one (``nd.*``, NDArray operators).
        profile_memory, profile_api: accepted; gpunda records nothing for them.
        continuous_dump, dump_period: accepted (``dump(finished=False)`` appends).
        aggregate_stats: keep per-op counts and times for ``dumps()``.
        profile_process: ``'worker'`` (this process); ``'server'`` is for a kvstore's
            server processes, which gpunda's stores do not have (``_server_command``).
    """
    cfg = dict(_DEFAULTS)
    for k, v in kwargs.items():
        if k not in _DEFAULTS:
            raise GpundaError(f"profiler.set_config: Cannot find argument {k!r}; possible "
                              f"arguments: {', '.join(_DEFAULTS)}")
        if k in _BOOL_KEYS:
            v = _parse_bool(k, v)
        elif k == "dump_period":
            v = float(v)
        elif k == "profile_process" and v not in ("worker", "server"):
            raise GpundaError(f"profiler.set_config: profile_process={v!r} must be 'worker' "
                              f"or 'server'")
        elif k == "filename":
            v = str(v)
        cfg[k] = v
    if cfg["profile_process"] == "server":
        # MXNet checks every argument first, then sends them (less profile_process) to the
        # servers; the worker's own configuration stays as it was
        _server_command("set_config", "kvstoreHandle: KVStoreHandle")
        return
    with _s.lock:
        _s.config = cfg
    if _s.running:
        _install_hooks()


def profiler_set_config(mode="symbolic", filename="profile.json"):
    """Deprecated MXNet form of ``set_config``: ``mode`` is 'symbolic' or 'all'."""
    warnings.warn("profiler.profiler_set_config() is deprecated. Please use "
                  "profiler.set_config() instead")
    set_config(**{"profile_" + mode: True, "filename": filename})


def _check_process(profile_process, what):
    """Whether the call is for this (worker) process; 'server' goes to ``_server_command``."""
    if profile_process not in ("worker", "server"):
        raise KeyError(profile_process)     # MXNet's own lookup error
    if profile_process == "server":
        _server_command(what, "kvStoreHandle: Kvstore Handle")
        return False
    return True


def _server_command(what, null_check):
    """MXNet's profiler command for the kvstore servers (c_api_profile.cc).

    MXNet sends it through the last native kvstore made (``set_kvstore_handle``): none is
    an MXNetError; a non-distributed store (KVStore::SetServerProfilerCommand) logs that
    there is no server and does nothing; a distributed one forwards it to its server
    processes. gpunda's distributed stores have no server processes (``dist_sync`` sums
    among the workers, ``dist_async`` serves from a thread of rank 0), so there the
    command is refused, saying to profile the workers.
    """
    ref = profiler_kvstore_handle
    store = ref() if isinstance(ref, weakref.ref) else ref
    if store is None:
        raise GpundaError(f"profiler.{what}: Check failed: {null_check} passed to profiler "
                          f"is null (profile_process='server' needs a kvstore: "
                          f"mx.kv.create(...) first)")
    if "dist" in str(getattr(store, "type", "")):
        raise GpundaError(f"profiler.{what}: profile_process='server' is not supported: "
                          f"gpunda's kvstore {store.type!r} has no server processes "
                          f"('dist_sync' sums among the workers, 'dist_async' serves from a "
                          f"thread of rank 0); profile the workers with "
                          f"profile_process='worker'")
    import logging
    logging.getLogger("gpunda.profiler").info(
        "Unable to pass server the profiler command. If you are training on single "
        "machine, then there is no server process to profile. Please profile the worker "
        "process instead.")


def set_state(state="stop", profile_process="worker"):
    """Start (``'run'``) or stop (``'stop'``) profiling."""
    if state not in ("run", "stop"):
        raise KeyError(state)       # MXNet's own lookup error for an unknown state
    if not _check_process(profile_process, "set_state"):
        return
    _s.running = state == "run"
    if _s.running:
        _s.paused = False
        _install_hooks()
    else:
        _remove_hooks()


def profiler_set_state(state="stop"):
    """Deprecated MXNet form of ``set_state``."""
    warnings.warn("profiler.profiler_set_state() is deprecated. Please use "
                  "profiler.set_state() instead")
    set_state(state)


def pause(profile_process="worker"):
    """Stop recording until ``resume()`` (the configuration stays)."""
    if not _check_process(profile_process, "pause"):
        return
    _s.paused = True
    _remove_hooks()


def resume(profile_process="worker"):
    """Record again after ``pause()``."""
    if not _check_process(profile_process, "resume"):
        return
    _s.paused = False
    if _s.running:
        _install_hooks()


def _recording():
    return _s.running and not _s.paused


def set_kvstore_handle(handle):
    """The kvstore ``profile_process='server'`` commands go through (``kvstore.create``
    sets it to a weak reference to each store it makes, as MXNet's sets its handle)."""
    global profiler_kvstore_handle
    profiler_kvstore_handle = handle


profiler_kvstore_handle = None


# -- the op hook ------------------------------------------------------------------------
_originals = {}     # OpDef -> its own compute, while hooked


_PYTHON_OPS = ("Custom", "_Native", "_NDArray")     # their time is the scope's, below
_tls = threading.local()      # .custom: the Custom op whose Python runs now, if any


def _timed(name, orig, cat, memory, record=True):
    def compute(xp, p, *arrays, **kw):
        t0 = time.perf_counter_ns()
        res = None
        try:
            res = orig(xp, p, *arrays, **kw)
            return res
        finally:
            cuda = getattr(xp, "cuda", None)
            if cuda is not None:        # device time, not launch time
                stream = cuda.get_current_stream()
                capturing = getattr(stream, "is_capturing", None)
                if capturing is None or not capturing():   # no sync inside a graph capture
                    stream.synchronize()
                label = f"gpu/{cuda.Device().id}"
            else:
                label = "cpu/0"
            if record:
                scope = getattr(_tls, "custom", None)
                if scope is None:
                    _record_duration(name, cat, t0, time.perf_counter_ns(), label)
                else:       # an op called by a Custom op's Python, named as in MXNet
                    _record_duration(f"{scope}::{name}", _CUSTOM, t0, time.perf_counter_ns(),
                                     label)
            if memory and res is not None:
                _track_memory(res, label, arrays)
    compute.__wrapped__ = orig
    return compute


_CUSTOM = "Custom Operator"


class _CustomScope:
    """A Custom op's forward or backward Python (hooks.profile_scope): recorded as
    '<label>::pure_python' in category 'Custom Operator'; the ops it calls are filed
    under '<label>::<op>' (MXNet's custom-operator profiling)."""

    __slots__ = ("label", "outer", "t0")

    def __init__(self, label):
        self.label = label

    def __enter__(self):
        self.outer = getattr(_tls, "custom", None)
        _tls.custom = self.label
        self.t0 = time.perf_counter_ns()
        return self

    def __exit__(self, *exc):
        t1 = time.perf_counter_ns()
        _tls.custom = self.outer
        _record_duration(f"{self.label}::pure_python", _CUSTOM, self.t0, t1)
        return False


def _creation(memory):
    """hooks.profile_creation: nd.zeros/ones/full timed as MXNet's _zeros/_ones/_full ops."""
    def wrap(name, fill):
        timed = _timed(name, lambda xp, args: fill(xp, *args), "operator", memory)
        return lambda xp, shape, dtype: timed(xp, (shape, dtype))
    return wrap


def _install_hooks():
    from gpunda.ops.registry import all_ops
    from gpunda._engine import imperative
    from gpunda._engine import cached_op
    cfg = _s.config
    imperative_on = cfg["profile_all"] or cfg["profile_imperative"]
    symbolic_on = cfg["profile_all"] or cfg["profile_symbolic"]
    memory = cfg["profile_all"] or cfg["profile_memory"]
    _remove_hooks()
    symbolic = {}
    for op in all_ops().values():
        _originals[op] = op.compute
        record = op.name not in _PYTHON_OPS
        if imperative_on:
            op.compute = _timed(op.name, _originals[op], "operator", memory, record)
        if symbolic_on:
            symbolic[op] = (op.compute if imperative_on
                            else _timed(op.name, _originals[op], "operator", memory, record))
    imperative.refresh_fast_paths()
    cached_op.refresh_step_computes(lambda op: symbolic.get(op, op.compute))
    if imperative_on:
        hooks.profile_creation = _creation(memory)
    hooks.profile_scope = _CustomScope
    _s.hooked = True


def _remove_hooks():
    if not _s.hooked:
        return
    from gpunda._engine import imperative
    from gpunda._engine import cached_op
    for op, orig in _originals.items():
        op.compute = orig
    _originals.clear()
    from gpunda.ops import _bf16
    _bf16.rewrap()      # bfloat16 first named while profiling: its wrappers stay
    hooks.profile_creation = hooks.profile_scope = None
    imperative.refresh_fast_paths()
    cached_op.refresh_step_computes(lambda op: op.compute)
    _s.hooked = False


# -- recording --------------------------------------------------------------------------
_T0_NS = time.time_ns() - time.perf_counter_ns()     # perf_counter -> wall-clock epoch


def _us(ns):
    return (ns + _T0_NS) // 1000


def _pid(label):
    pid = _s.devices.get(label)
    if pid is None:
        pid = _s.devices[label] = len(_s.devices)
    return pid


def _record_duration(name, cat, t0, t1, label="cpu/0", begin="B", end="E", extra=None):
    if not _recording():
        return
    tid = threading.get_ident()
    with _s.lock:
        pid = _pid(label)
        b = {"name": name, "cat": cat, "ph": begin, "ts": _us(t0), "pid": pid, "tid": tid}
        e = {"name": name, "cat": cat, "ph": end, "ts": _us(t1), "pid": pid, "tid": tid}
        if extra:
            b.update(extra)
            e.update(extra)
        _s.events += (b, e)
        _s.undumped = True
        if _s.config["aggregate_stats"]:
            ms = (t1 - t0) / 1e6
            st = _s.stats.setdefault(cat.split(",")[0], {}).get(name)
            if st is None:
                _s.stats[cat.split(",")[0]][name] = [1, ms, ms, ms]
            else:
                st[0] += 1
                st[1] += ms
                st[2] = min(st[2], ms)
                st[3] = max(st[3], ms)


def _record_instant(ev, label):
    if not _recording():
        return
    with _s.lock:
        ev.update(ts=_us(time.perf_counter_ns()), pid=_pid(label), tid=threading.get_ident())
        _s.events.append(ev)
        _s.undumped = True


def _root(a):
    while getattr(a, "base", None) is not None:
        a = a.base
    return a


def _track_memory(res, label, inputs):
    """Count the bytes an op allocated (its outputs' own buffers, not views of its inputs)
    until they are freed."""
    seen = {id(_root(x)) for x in inputs}
    for a in (res if isinstance(res, (tuple, list)) else (res,)):
        buf = _root(a)
        nbytes = getattr(buf, "nbytes", None)
        if nbytes is None or id(buf) in seen:
            continue
        seen.add(id(buf))
        try:
            weakref.finalize(buf, _memory_change, label, -nbytes)
        except TypeError:       # not weak-referenceable: cannot see it freed
            continue
        _memory_change(label, nbytes)


def _memory_change(label, delta):
    with _s.lock:
        used = _s.mem[label] = _s.mem.get(label, 0) + delta
        if not _recording():
            return
        name = f"Memory: {label}"
        _s.events.append({"name": name, "cat": "Device Storage", "ph": "C",
                          "ts": _us(time.perf_counter_ns()), "args": {name: used},
                          "pid": _pid(label), "tid": threading.get_ident()})
        _s.undumped = True
        if _s.config["aggregate_stats"]:
            st = _s.mem_stats.get(name)
            if st is None:
                _s.mem_stats[name] = [1, used, used, used]
            else:
                st[0] += 1
                st[1] = min(st[1], used)
                st[2] = max(st[2], used)
                st[3] += used


# -- output -----------------------------------------------------------------------------
def _trace():
    meta = [{"ph": "M", "args": {"name": label}, "pid": pid, "name": "process_name"}
            for label, pid in _s.devices.items()]
    return {"traceEvents": meta + list(_s.events), "displayTimeUnit": "ms"}


def dump(finished=True, profile_process="worker"):
    """Write the trace so far to the configured file (chrome://tracing JSON).

    ``finished=False`` keeps collecting, so later dumps rewrite the file with
    more events; ``finished=True`` (the default) ends the trace: the next
    events start a new one.
    """
    if not _check_process(profile_process, "dump"):
        return
    with _s.lock:
        text = json.dumps(_trace(), indent=4)
        fname = _s.config["filename"]
        if finished:
            _s.events = []
        _s.undumped = False
    d = os.path.dirname(os.path.abspath(fname))
    os.makedirs(d, exist_ok=True)
    with open(fname, "w") as f:
        f.write(text)


def dump_profile():
    """Deprecated MXNet form of ``dump(True)``."""
    warnings.warn("profiler.dump_profile() is deprecated. Please use profiler.dump() instead")
    dump(True)


_SORT_KEYS = {"total": 1, "avg": None, "min": 2, "max": 3, "count": 0}


def dumps(reset=False, format="table", sort_by="total", ascending=False):
    """The aggregate statistics (``aggregate_stats=True``) as a table or JSON string.

    Per category (``operator``, a Domain's name, ``event``) and name: Count,
    Total, Min, Max and Avg time in ms, sorted by ``sort_by`` ('total', 'avg',
    'min', 'max', 'count'). ``reset=True`` clears them after reading. Empty
    when aggregate_stats is off, as in MXNet.
    """
    if format not in ("table", "json"):
        raise GpundaError(f"profiler.dumps: format={format!r} must be 'table' or 'json'")
    if sort_by not in _SORT_KEYS:
        raise GpundaError(f"profiler.dumps: sort_by={sort_by!r} must be one of "
                          f"{', '.join(_SORT_KEYS)}")
    if ascending not in (False, True) or reset not in (False, True):
        raise GpundaError(f"profiler.dumps: reset={reset!r} and ascending={ascending!r} "
                          f"must be booleans")
    with _s.lock:
        if not _s.config["aggregate_stats"]:
            return ""
        rows = {cat: sorted(((n, c, t, lo, hi, t / c) for n, (c, t, lo, hi) in items.items()),
                            key=_sorter(sort_by), reverse=not ascending)
                for cat, items in _s.stats.items()}
        # memory rows in kB (1000 bytes, as MXNet prints them); they have no Total
        mem = sorted(((n, c, lo / 1e3, hi / 1e3, tot / c / 1e3)
                      for n, (c, lo, hi, tot) in _s.mem_stats.items()),
                     key=_mem_sorter(sort_by), reverse=not ascending)
        if reset:
            _s.stats = {}
            _s.mem_stats = {}
    return _as_json(rows, mem) if format == "json" else _as_table(rows, mem)


def _sorter(sort_by):
    idx = {"count": 1, "total": 2, "min": 3, "max": 4, "avg": 5}[sort_by]
    return lambda r: r[idx]


def _mem_sorter(sort_by):
    idx = {"count": 1, "total": 1, "min": 2, "max": 3, "avg": 4}[sort_by]
    return lambda r: r[idx]


def _as_json(rows, mem):
    memory = {"Device Storage": {n: {"Count": c, "Min": round(lo, 4), "Max": round(hi, 4),
                                     "Avg": round(avg, 4)} for n, c, lo, hi, avg in mem}} \
        if mem else {}
    time_part = {cat: {n: {"Count": c, "Total": round(t, 4), "Min": round(lo, 4),
                           "Max": round(hi, 4), "Avg": round(avg, 4)}
                       for n, c, t, lo, hi, avg in items}
                 for cat, items in rows.items()}
    return json.dumps({"Time": time_part, "Memory": memory,
                       "Unit": {"Time": "ms", "Memory": "kB"}}, indent=4)


def _as_table(rows, mem):
    out = ["", "Profile Statistics:", "\tNote the difference in units for different entries."]
    if mem:
        out += ["Device Storage", "=================",
                f"{'Name':<30}{'Total Count':>11}{'Min Use  (kB)':>17}{'Max Use  (kB)':>17}"
                f"{'Avg Use  (kB)':>17}",
                f"{'----':<30}{'-----------':>11}{'-------------':>17}{'-------------':>17}"
                f"{'-------------':>17}"]
        out += [f"{n:<30}{c:>11}{lo:>17.4f}{hi:>17.4f}{avg:>17.4f}" for n, c, lo, hi, avg in mem]
        out.append("")
    head = (f"{'Name':<30}{'Total Count':>11}{'Time (ms)':>17}{'Min Time (ms)':>17}"
            f"{'Max Time (ms)':>17}{'Avg Time (ms)':>17}")
    rule = (f"{'----':<30}{'-----------':>11}{'---------':>17}{'-------------':>17}"
            f"{'-------------':>17}{'-------------':>17}")
    for cat, items in rows.items():
        out += [cat, "=================", head, rule]
        for n, c, t, lo, hi, avg in items:
            out.append(f"{n:<30}{c:>11}{t:>17.4f}{lo:>17.4f}{hi:>17.4f}{avg:>17.4f}")
        out.append("")
    return "\n".join(out) + "\n"


@atexit.register
def _dump_at_exit():
    # MXNet writes the trace when the process ends if events were never dumped
    if _s.undumped and _s.events:
        try:
            dump(True)
        except OSError:
            pass


# -- user-defined ranges: Domain, Task, Frame, Event, Counter, Marker ---------------------
class Domain:
    """A named category grouping Tasks, Frames, Counters and Markers in the trace."""

    def __init__(self, name):
        self.name = name

    def __str__(self):
        return self.name

    def new_task(self, name):
        """A Task in this domain."""
        return Task(self, name)

    def new_frame(self, name):
        """A Frame in this domain."""
        return Frame(self, name)

    def new_counter(self, name, value=None):
        """A Counter in this domain, starting at ``value`` if given."""
        return Counter(self, name, value)

    def new_marker(self, name):
        """A Marker in this domain."""
        return Marker(self, name)


class _Duration:
    _begin, _end = "B", "E"

    def __init__(self, name, cat, label):
        self.name, self._cat, self._label, self._t0 = name, cat, label, None

    def start(self):
        """Start timing."""
        self._t0 = time.perf_counter_ns()

    def stop(self):
        """Stop timing and record the range (when the profiler runs)."""
        if self._t0 is None:
            raise GpundaError(f"profiler {type(self).__name__} {self.name!r}: stop() before "
                              f"start()")
        _record_duration(self.name, self._cat, self._t0, time.perf_counter_ns(), self._label,
                         self._begin, self._end, self._extra())
        self._t0 = None

    def _extra(self):
        return None

    def __enter__(self):
        self.start()
        return self

    def __exit__(self, *exc):
        self.stop()
        return False

    def __str__(self):
        return self.name


class Task(_Duration):
    """A unit of work on one thread; all its passes aggregate together."""
    _begin, _end = "b", "e"

    def __init__(self, domain, name):
        super().__init__(name, domain.name, domain.name)
        self.domain = domain

    def _extra(self):
        return {"id": threading.get_ident()}


class Frame(_Duration):
    """A range analysed per pass (each start/stop is its own frame)."""
    _begin, _end = "(", ")"

    def __init__(self, domain, name):
        super().__init__(name, f"{domain.name},frame", domain.name)
        self.domain = domain


class Event(_Duration):
    """A free-standing named range (no domain)."""

    def __init__(self, name):
        super().__init__(name, "event", name)


class Counter:
    """A named integer whose every change is recorded."""

    def __init__(self, domain, name, value=None):
        self.domain, self.name, self._value = domain, name, 0
        if value is not None:
            self.set_value(value)

    def _emit(self):
        _record_instant({"name": self.name, "cat": self.domain.name, "ph": "C",
                         "args": {self.name: self._value}}, self.domain.name)

    def set_value(self, value):
        """Set the counter to ``value``."""
        self._value = int(value)
        self._emit()

    def increment(self, delta=1):
        """Add ``delta``."""
        self._value += int(delta)
        self._emit()

    def decrement(self, delta=1):
        """Subtract ``delta``."""
        self._value -= int(delta)
        self._emit()

    def __iadd__(self, delta):
        self.increment(delta)
        return self

    def __isub__(self, delta):
        self.decrement(delta)
        return self

    def __str__(self):
        return self.name


_MARKER_SCOPES = {"global": "g", "process": "p", "thread": "t", "task": "t", "marker": "p"}


class Marker:
    """An instant event: ``mark(scope)`` with scope 'global', 'process', 'thread', 'task'."""

    def __init__(self, domain, name):
        self.domain, self.name = domain, name

    def mark(self, scope="process"):
        """Record the instant."""
        if scope not in _MARKER_SCOPES:
            raise GpundaError(f"profiler.Marker.mark: scope={scope!r} must be one of "
                              f"{', '.join(_MARKER_SCOPES)}")
        _record_instant({"name": self.name, "cat": f"{self.domain.name},instant_marker",
                         "ph": "n", "s": _MARKER_SCOPES[scope]}, self.domain.name)

    def __str__(self):
        return self.name


class scope(_Duration):
    """``with profiler.scope("fwd"):`` records the block as one range in category "scope"."""

    def __init__(self, name="<unk>:"):
        super().__init__(name, "scope", "cpu/0")
