"""The CPU backend's host memory pool: glibc malloc keeps freed blocks (NOTE [Host memory
pool], gpunda/backends/_host_memory.py)."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

import gpunda  # noqa: F401  (the CPU backend tunes malloc when it is created)
from gpunda.backends import _host_memory

MODULE = Path(_host_memory.__file__)
glibc = pytest.mark.skipif(not _host_memory._glibc(), reason="glibc's malloc only")

# allocates, touches and frees an 8 MB block 20 times; prints the page faults it took
_PROBE = f"""
import importlib.util, resource, sys
import numpy as np
spec = importlib.util.spec_from_file_location("hm", {str(MODULE)!r})
hm = importlib.util.module_from_spec(spec)
spec.loader.exec_module(hm)
print(hm.keep_freed_memory())
a, b = np.ones(1 << 21, np.float32), np.ones(1 << 21, np.float32); del a, b
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    a = np.ones(1 << 21, np.float32)
    b = np.ones(1 << 21, np.float32)     # a second live block: the first is not just reused
    del a, b
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def _probe(**env):
    out = subprocess.run([sys.executable, "-c", _PROBE], env={**os.environ, **env},
                         capture_output=True, text=True, check=True).stdout.split()
    return out[0] == "True", int(out[1])


@glibc
def test_freed_blocks_are_reused_without_page_faults():
    tuned, faults = _probe()
    assert tuned
    assert faults < 200         # 40 blocks of 2048 pages each, without the pool


@glibc
def test_the_pool_can_be_turned_off():
    tuned, faults = _probe(GPUNDA_CPU_MEM_POOL="0")
    assert not tuned
    assert faults > 2000        # glibc's defaults give large blocks back


@glibc
def test_the_cpu_backend_is_tuned_and_empty_cache_trims():
    assert _host_memory.keep_freed_memory() is (os.environ.get("GPUNDA_CPU_MEM_POOL") != "0")
    from gpunda.backends import _cpu
    _cpu.empty_cache()          # malloc_trim: must not fail, and the pool stays usable
    import numpy as np
    np.testing.assert_array_equal(np.ones(1 << 20, np.float32).sum(), 1 << 20)
