"""What this build of gpunda supports (MXNet's ``mx.runtime.Features``)."""
from __future__ import annotations

import collections

__all__ = ["Feature", "Features", "feature_list"]

Feature = collections.namedtuple("Feature", ["name", "enabled"])


def _features():
    from .backends import discovery
    n, _ = discovery.probe()
    has_cupy = discovery.cupy_version() is not None
    try:
        import pynvml  # noqa: F401
        has_nvml = True
    except Exception:
        has_nvml = False
    graphs = False
    if n:
        from .backends import gpu_backend
        graphs = gpu_backend(0).supports_graphs
    return [
        Feature("CUDA", n > 0), Feature("CUPY", has_cupy), Feature("CUDA_GRAPHS", graphs),
        Feature("NVML", has_nvml), Feature("CPU_NUMPY", True), Feature("SPARSE", True),
        Feature("DLPACK", True), Feature("CUDNN", False), Feature("MKLDNN", False),
        Feature("DIST_KVSTORE", _has("mpi4py")), Feature("NCCL", n > 0 and has_cupy),
        Feature("INT64_TENSOR_SIZE", True), Feature("SIGNAL_HANDLER", False),
        Feature("DEBUG", False),
    ]


def _has(mod):
    import importlib.util
    return importlib.util.find_spec(mod) is not None


class Features(collections.OrderedDict):
    """Mapping of feature name to Feature(name, enabled)."""

    def __init__(self):
        super().__init__((f.name, f) for f in _features())

    def __repr__(self):
        return str(list(self.values()))

    def is_enabled(self, feature_name):
        """Whether ``feature_name`` (case-insensitive) is enabled."""
        name = feature_name.upper()
        if name not in self:
            from .base import GpundaError
            raise GpundaError(f"Features: unknown feature {feature_name!r}; known: {list(self)}")
        return self[name].enabled


def feature_list():
    """A list of Feature tuples."""
    return list(Features().values())
