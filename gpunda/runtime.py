"""What this installation of gpunda supports (MXNet's ``mx.runtime.Features``).

MXNet reported the compile-time flags of libmxnet. gpunda is pure Python, so
each of MXNet's feature names says whether gpunda, here and now, gives what the
name stands for: ``CUDA`` only when a GPU is usable, ``BLAS_*``/``LAPACK`` and
the ``CPU_*`` instruction sets from the NumPy build that does the CPU work,
``OPENCV`` never (gpunda decodes no images), ``PROFILER`` always
(``mx.profiler``). gpunda's own capabilities follow MXNet's names.
"""
from __future__ import annotations

import collections
import importlib.util

from gpunda.base import GpundaError
from gpunda.base import check_call  # noqa: F401  (MXNet's module has it)

__all__ = ["Feature", "Features", "feature_list"]


class Feature:
    """One feature: its ``name`` and whether it is ``enabled``."""

    __slots__ = ("_name", "_enabled")

    def __init__(self, name, enabled):
        self._name, self._enabled = name, bool(enabled)

    @property
    def name(self):
        return self._name

    @property
    def enabled(self):
        return self._enabled

    def __eq__(self, other):
        return isinstance(other, Feature) and (self._name, self._enabled) == (other._name, other._enabled)

    def __hash__(self):
        return hash((self._name, self._enabled))

    def __repr__(self):
        return ("✔ " if self._enabled else "✖ ") + self._name


def _has(mod):
    try:
        return importlib.util.find_spec(mod) is not None
    except (ImportError, ValueError):
        return False


def _numpy_cpu_features():
    try:
        from numpy._core._multiarray_umath import __cpu_features__
    except ImportError:
        try:
            from numpy.core._multiarray_umath import __cpu_features__
        except ImportError:
            return {}
    return __cpu_features__


def _blas_name():
    import numpy as np
    try:
        deps = np.show_config(mode="dicts").get("Build Dependencies", {})
        return str(deps.get("blas", {}).get("name", "")).lower()
    except Exception:
        return ""


def _gpu_facts():
    """(CUDA usable, CuPy importable, CUDA graphs, NCCL) without creating a CUDA context
    when there is no GPU."""
    from gpunda.backends import discovery
    n, _ = discovery.probe()
    has_cupy = discovery.cupy_version() is not None
    if not n or not has_cupy:
        return False, has_cupy, False, False
    from gpunda.backends import gpu_backend
    graphs = bool(gpu_backend(0).supports_graphs)
    try:
        from cupy.cuda import nccl
        has_nccl = bool(nccl.available) if hasattr(nccl, "available") else True
    except Exception:
        has_nccl = False
    return True, True, graphs, has_nccl


def _features():
    cuda, has_cupy, graphs, nccl = _gpu_facts()
    cpu = _numpy_cpu_features()
    blas = _blas_name()
    return [
        # MXNet's names, in MXNet's order
        ("CUDA", cuda), ("CUDNN", False), ("NCCL", nccl), ("CUDA_RTC", False),
        ("TENSORRT", False),
        ("CPU_SSE", cpu.get("SSE", False)), ("CPU_SSE2", cpu.get("SSE2", False)),
        ("CPU_SSE3", cpu.get("SSE3", False)), ("CPU_SSE4_1", cpu.get("SSE41", False)),
        ("CPU_SSE4_2", cpu.get("SSE42", False)), ("CPU_SSE4A", cpu.get("SSE4A", False)),
        ("CPU_AVX", cpu.get("AVX", False)), ("CPU_AVX2", cpu.get("AVX2", False)),
        ("OPENMP", False), ("SSE", cpu.get("SSE", False)), ("F16C", cpu.get("F16C", False)),
        ("JEMALLOC", False),
        ("BLAS_OPEN", "openblas" in blas), ("BLAS_ATLAS", "atlas" in blas),
        ("BLAS_MKL", "mkl" in blas), ("BLAS_APPLE", "accelerate" in blas),
        ("LAPACK", True), ("MKLDNN", False), ("OPENCV", False), ("CAFFE", False),
        ("PROFILER", True), ("DIST_KVSTORE", _has("mpi4py")), ("CXX14", False),
        ("INT64_TENSOR_SIZE", True), ("SIGNAL_HANDLER", False), ("DEBUG", False),
        ("TVM_OP", False),
        # gpunda's own
        ("CUPY", has_cupy), ("CUDA_GRAPHS", graphs), ("NVML", _has("pynvml")),
        ("CPU_NUMPY", True), ("SPARSE", True), ("DLPACK", True),
    ]


class Features(collections.OrderedDict):
    """Feature name -> Feature, built once per process (``Features() is Features()``)."""

    instance = None

    def __new__(cls):
        if cls.instance is None:
            inst = super().__new__(cls)
            collections.OrderedDict.__init__(inst, ((n, Feature(n, e)) for n, e in _features()))
            cls.instance = inst
        return cls.instance

    def __init__(self):
        pass    # filled once, in __new__

    def __repr__(self):
        return str(list(self.values()))

    def is_enabled(self, feature_name):
        """Whether ``feature_name`` (any case) is enabled; an unknown name raises."""
        name = feature_name.upper()
        if name not in self:
            raise GpundaError(f"Feature '{feature_name}' is unknown, known features are: "
                              f"{list(self.keys())}")
        return self[name].enabled


def feature_list():
    """Every Feature, as a list."""
    return list(Features().values())
