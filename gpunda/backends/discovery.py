"""Finding GPUs without crashing: CuPy for usability, NVML for names and memory.

Every probe here catches the ways a machine can lack a GPU (CuPy missing, no
driver, no device, ``CUDA_VISIBLE_DEVICES=""``) and reports them as a reason
string. Results are computed once per process: the CUDA runtime reads
``CUDA_VISIBLE_DEVICES`` once anyway.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

__all__ = ["GpuInfo", "probe", "usable_gpu_count", "list_gpus", "most_free_gpu",
           "parse_visible_devices", "cupy_version", "driver_cuda_version", "cupy_runtime_cuda"]

_probe_result = None


@dataclass
class GpuInfo:
    """One CUDA-visible GPU as NVML describes it."""
    ordinal: int          # CUDA ordinal, what gpu(i) means
    nvml_index: int | None
    name: str
    total_bytes: int | None
    free_bytes: int | None
    uuid: str | None = None
    pci_bus_id: str | None = None


def cupy_version():
    """CuPy's version string, or None when it cannot be imported."""
    try:
        import cupy
    except Exception:   # ImportError, or a broken install raising at import
        return None
    return cupy.__version__


def probe():
    """(number of usable CUDA devices, reason when zero). Never raises."""
    global _probe_result
    if _probe_result is None:
        _probe_result = _probe()
    return _probe_result


def _probe():
    if os.environ.get("GPUNDA_TEST_STANDIN_GPU", "").strip().lower() not in ("", "0", "false",
                                                                              "no"):
        return _probe_standin()
    if os.environ.get("CUDA_VISIBLE_DEVICES", None) == "":
        return 0, "CUDA_VISIBLE_DEVICES is empty"
    try:
        import cupy
    except Exception as e:
        return 0, f"CuPy is not installed ({type(e).__name__}); pip install 'gpunda[gpu]'"
    try:
        n = int(cupy.cuda.runtime.getDeviceCount())
    except Exception as e:   # CUDARuntimeError: no driver (35), no device (100), ...
        return 0, f"CUDA runtime reports no device ({_short(e)})"
    if n == 0:
        return 0, "CUDA runtime reports 0 devices"
    try:
        # a tiny allocation proves the driver works, not just that it loads
        with cupy.cuda.Device(0):
            cupy.zeros(1).sum().item()
    except Exception as e:
        return 0, f"CUDA device 0 is not usable ({_short(e)})"
    return n, ""


def _probe_standin():
    # the test-only CuPy stand-in (backends/_standin.py): one GPU, CuPy's rules on NumPy
    try:
        import cupy  # noqa: F401 -- the stand-in reads CuPy's namespaces
    except Exception as e:
        return 0, f"GPUNDA_TEST_STANDIN_GPU is set but CuPy cannot be imported ({_short(e)})"
    return 1, ""


def standin_active():
    """Whether gpu(0) is the test stand-in (GPUNDA_TEST_STANDIN_GPU and CuPy importable)."""
    return probe()[0] > 0 and os.environ.get("GPUNDA_TEST_STANDIN_GPU", "").strip().lower() \
        not in ("", "0", "false", "no")


def _short(e):
    s = str(e).strip().splitlines()
    return f"{type(e).__name__}: {s[0] if s else ''}"[:200]


def usable_gpu_count():
    """How many GPUs gpunda can compute on."""
    return probe()[0]


def parse_visible_devices(value, nvml_uuids=None):
    """NVML indices named by ``CUDA_VISIBLE_DEVICES``, in CUDA ordinal order.

    ``value`` None means every device. Integer entries are NVML/PCI ordinals;
    ``GPU-…`` entries are UUID prefixes matched against ``nvml_uuids``. As CUDA
    does, an invalid entry ends the list, and a repeated device empties it.
    """
    n = len(nvml_uuids) if nvml_uuids is not None else None
    if value is None:
        return list(range(n)) if n is not None else None
    out = []
    for tok in value.split(","):
        tok = tok.strip()
        if not tok:
            break
        if tok.lstrip("-").isdigit():
            idx = int(tok)
            if idx < 0 or (n is not None and idx >= n):
                break
        elif tok.startswith("GPU-") or tok.startswith("MIG-"):
            if nvml_uuids is None:
                break
            hits = [i for i, u in enumerate(nvml_uuids) if u and u.startswith(tok)]
            if len(hits) != 1:
                break
            idx = hits[0]
        else:
            break
        if idx in out:
            return []
        out.append(idx)
    return out


def _nvml():
    try:
        import pynvml
        pynvml.nvmlInit()
        return pynvml
    except Exception:   # ImportError, NVMLError (library not found, driver not loaded), OSError
        return None


def driver_cuda_version():
    """``((major, minor), "")`` of the newest CUDA the NVIDIA driver runs, read through NVML,
    or ``(None, reason)`` when there is no NVML or driver. Never raises.

    NVML talks to the driver without the CUDA runtime, so this creates no CUDA context
    (``python -m gpunda info`` asks it on machines with no GPU, or a busy one).
    """
    try:
        import pynvml
    except Exception as e:   # nvidia-ml-py not installed, or broken
        return None, f"nvidia-ml-py is not installed ({type(e).__name__})"
    try:
        pynvml.nvmlInit()
    except Exception as e:   # NVMLError: LibraryNotFound (no driver), DriverNotLoaded; OSError
        return None, f"NVML: {_short(e)}"
    # _v2 reads the driver's own library; the first form falls back to a guess when libcuda
    # is missing, and very old nvidia-ml-py lacks _v2
    for fn in ("nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"):
        get = getattr(pynvml, fn, None)
        if get is None:
            continue
        try:
            v = int(get())     # e.g. 13000 for 13.0, 12040 for 12.4
        except Exception:
            continue
        if v > 0:
            return (v // 1000, (v % 1000) // 10), ""
    return None, "NVML does not report the driver's CUDA version"


def cupy_runtime_cuda():
    """(major, minor) of the CUDA runtime CuPy runs on, asked only when a real GPU is usable
    (None otherwise: no GPU, the test stand-in, or an error). Never raises."""
    if probe()[0] == 0 or standin_active():
        return None
    try:
        import cupy
        v = int(cupy.cuda.runtime.runtimeGetVersion())
    except Exception:
        return None
    return v // 1000, (v % 1000) // 10


def list_gpus():
    """GpuInfo for every CUDA-visible GPU, in CUDA ordinal order.

    Uses NVML for names and memory when available and maps NVML devices to
    CUDA ordinals by PCI bus id (NVML's index order is not CUDA's); falls back
    to CuPy's device properties.
    """
    n, _ = probe()
    if n == 0:
        return []
    if standin_active():
        from gpunda.backends import _standin, _standin_cuda
        free, total = _standin_cuda.runtime.memGetInfo()
        return [GpuInfo(0, None, _standin.NAME, total, free)]
    import cupy
    nv = _nvml()
    gpus = []
    for i in range(n):
        info = GpuInfo(i, None, f"CUDA device {i}", None, None)
        try:
            props = cupy.cuda.runtime.getDeviceProperties(i)
            name = props.get("name", b"")
            info.name = name.decode() if isinstance(name, bytes) else str(name)
            info.total_bytes = int(props.get("totalGlobalMem", 0)) or None
            info.pci_bus_id = cupy.cuda.Device(i).pci_bus_id
        except Exception:
            pass
        if nv is not None and info.pci_bus_id:
            try:
                h = nv.nvmlDeviceGetHandleByPciBusId(info.pci_bus_id)
                mem = nv.nvmlDeviceGetMemoryInfo(h)
                info.total_bytes, info.free_bytes = int(mem.total), int(mem.free)
                info.nvml_index = int(nv.nvmlDeviceGetIndex(h))
                nm = nv.nvmlDeviceGetName(h)
                info.name = nm.decode() if isinstance(nm, bytes) else nm
                u = nv.nvmlDeviceGetUUID(h)
                info.uuid = u.decode() if isinstance(u, bytes) else u
            except Exception:
                pass
        if info.free_bytes is None:
            try:
                with cupy.cuda.Device(i):
                    info.free_bytes, info.total_bytes = map(int, cupy.cuda.runtime.memGetInfo())
            except Exception:
                pass
        gpus.append(info)
    return gpus


def most_free_gpu():
    """CUDA ordinal of the visible GPU with the most free memory (0 on ties)."""
    gpus = list_gpus()
    if not gpus:
        return 0
    return max(gpus, key=lambda g: (g.free_bytes or 0, -g.ordinal)).ordinal


def compute_capability(ordinal):
    """CUDA compute capability of GPU ``ordinal`` as major * 10 + minor (80 for an A100).

    Raises ``GpundaError`` when that GPU is not usable.
    """
    n, why = probe()
    if not 0 <= ordinal < n:
        from gpunda.base import GpundaError
        raise GpundaError(f"compute_capability: gpu({ordinal}) is not usable "
                          f"({why or f'{n} GPU(s) visible'})")
    if standin_active():
        from gpunda.backends._standin_cuda import runtime    # the test stand-in's device, not a real one
    else:
        from cupy.cuda import runtime
    props = runtime.getDeviceProperties(ordinal)
    return int(props["major"]) * 10 + int(props["minor"])
