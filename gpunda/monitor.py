"""``mx.monitor`` (``mx.mon``): MXNet's Monitor, statistics of an executor's arrays per batch.

``install(exe)`` hooks the executor's monitor callback; between ``tic()`` and
``toc()`` of every ``interval``-th batch each op output (and input gradient, in
backward) whose name matches ``pattern`` is recorded as ``stat_func(array)``,
and ``toc`` adds the arguments and auxiliary states. ``toc`` returns
``(step, name, text)`` triples, the text being the stat values as MXNet prints
them (tab-terminated); ``toc_print`` logs them.
"""
from __future__ import annotations

import logging
import re
from math import sqrt

from gpunda.base import py_str

__all__ = ["Monitor"]


def _norm_stat(x):
    from gpunda import ndarray
    return ndarray.norm(x) / sqrt(x.size)


class Monitor:
    """Collect ``stat_func`` of the arrays of installed executors every ``interval`` batches.

    Args:
        interval: collect on every ``interval``-th ``tic``.
        stat_func: array -> NDArray (or list of them); default ``norm(x)/sqrt(x.size)``.
        pattern: regular expression the names must match (``re.match``).
        sort: sort the results by name.
        monitor_all: also report each op's inputs, not only its outputs.
    """

    def __init__(self, interval, stat_func=None, pattern=".*", sort=False, monitor_all=False):
        self.stat_func = _norm_stat if stat_func is None else stat_func
        self.interval = interval
        self.activated = False
        self.queue = []
        self.step = 0
        self.exes = []
        self.re_prog = re.compile(pattern)
        self.sort = sort
        self.monitor_all = monitor_all

        def stat_helper(name, array):
            name = py_str(name)
            if not self.activated or not self.re_prog.match(name):
                return
            self.queue.append((self.step, name, self.stat_func(array)))
        self.stat_helper = stat_helper

    def install(self, exe):
        """Hook executor ``exe`` (what ``Module.install_monitor`` does for each of its own)."""
        exe.set_monitor_callback(self.stat_helper, self.monitor_all)
        self.exes.append(exe)

    def _wait(self):
        for exe in self.exes:
            for array in exe.arg_arrays:
                array.wait_to_read()
            for array in exe.aux_arrays:
                array.wait_to_read()

    def tic(self):
        """Start a batch; collection is on for every ``interval``-th one."""
        if self.step % self.interval == 0:
            self._wait()
            self.queue = []
            self.activated = True
        self.step += 1

    def toc(self):
        """End the batch: add the arguments and aux states, return ``[(step, name, text)]``."""
        from gpunda.ndarray import NDArray
        if not self.activated:
            return []
        self._wait()
        for exe in self.exes:
            for name, array in zip(exe._symbol.list_arguments(), exe.arg_arrays):
                if self.re_prog.match(name):
                    self.queue.append((self.step, name, self.stat_func(array)))
            for name, array in zip(exe._symbol.list_auxiliary_states(), exe.aux_arrays):
                if self.re_prog.match(name):
                    self.queue.append((self.step, name, self.stat_func(array)))
        self.activated = False
        if self.sort:
            self.queue.sort(key=lambda x: x[1])
        res = []
        for n, k, v_list in self.queue:
            if isinstance(v_list, NDArray):
                v_list = [v_list]
            if not isinstance(v_list, list):
                raise TypeError(f"Monitor: stat_func must return an NDArray or a list of them, "
                                f"got {type(v_list).__name__}")
            s = ""
            for v in v_list:
                if not isinstance(v, NDArray):
                    raise TypeError(f"Monitor: stat_func returned a {type(v).__name__} in its "
                                    f"list, not an NDArray")
                s += (str(v.asscalar()) if v.shape == (1,) else str(v.asnumpy())) + "\t"
            res.append((n, k, s))
        self.queue = []
        return res

    def toc_print(self):
        """``toc`` and log each result as MXNet does."""
        for n, k, v in self.toc():
            logging.info("Batch: {:7d} {:30s} {:s}".format(n, k, v))
