"""The registry of the CUDA sources gpunda holds or generates (NOTE [CUDA source registry]).

``python -m gpunda nvrtc-check`` (``_tools/nvrtc_check.py``) compiles every source that a
registered provider yields, with NVRTC, for each GPU architecture it checks. A provider is
a callable with no arguments that returns an iterable of :class:`CudaSource` (or of
``(name, code)`` pairs), or a ``"module:function"`` string naming one, imported only when
the check runs: a module of any layer can register itself here (this module imports only
the standard library) without importing the check, and without paying for its sources at
``import gpunda``.
"""
from __future__ import annotations

import importlib
from typing import Callable, NamedTuple, Union

# NOTE [CUDA source registry]
# Every CUDA C++ source gpunda compiles at run time (cupy.RawModule code: the capture-safe
# GEMM, the flat optimizer kernels, the rtc examples, a fusion pass's generated kernels)
# must compile for every architecture gpunda supports, and CI has no GPU. NVRTC compiles
# without one, so CI compiles them all; this registry is how a source reaches that check.
# A provider yields the sources as they would be passed to cupy.RawModule: the code, the
# name expressions (template instantiations to export) and the NVRTC options it is given.

__all__ = ["CudaSource", "register_source_provider", "source_providers", "collect_sources"]


class CudaSource(NamedTuple):
    """One compilation unit: ``name`` (for reports), ``code``, the ``name_expressions``
    to instantiate (templates), and extra NVRTC ``options`` ("--fmad=false", "-I...")."""
    name: str
    code: str
    name_expressions: tuple = ()
    options: tuple = ()


Provider = Union[Callable[[], object], str]
_PROVIDERS: "dict[str, Provider]" = {}


def register_source_provider(name, provider):
    """Register ``provider`` (a callable, or a ``"module:function"`` string) under ``name``;
    registering a name again replaces the earlier provider."""
    if not (callable(provider) or (isinstance(provider, str) and ":" in provider)):
        raise TypeError(f"register_source_provider({name!r}): the provider must be a callable "
                        f"or a 'module:function' string, not {provider!r}")
    _PROVIDERS[str(name)] = provider


def source_providers():
    """The registered providers, ``{name: provider}`` (a copy)."""
    return dict(_PROVIDERS)


def _resolve(provider):
    if callable(provider):
        return provider
    mod, _, fn = provider.partition(":")
    return getattr(importlib.import_module(mod), fn)


def collect_sources(names=None):
    """``[(provider name, CudaSource)]`` of the providers ``names`` (all when None).

    A provider that raises is reported as one source named ``<provider>!`` whose code is
    None and whose options hold the error, so the check fails on it instead of skipping it.
    """
    out = []
    for pname, prov in _PROVIDERS.items():
        if names is not None and pname not in names:
            continue
        try:
            items = list(_resolve(prov)())
        except Exception as e:   # noqa: BLE001 -- reported as a failure of the check
            out.append((pname, CudaSource(f"{pname}!", None, (), (f"{type(e).__name__}: {e}",))))
            continue
        for it in items:
            if not isinstance(it, CudaSource):
                it = CudaSource(*it)
            out.append((pname, it))
    return out


# the sources gpunda itself holds (resolved only when the check runs)
register_source_provider("cuda_gemm", "gpunda.backends._cuda_gemm:cuda_sources")
register_source_provider("flat_optimizer", "gpunda.ops.optimizer.flat_cuda:cuda_sources")
register_source_provider("multi_optimizer", "gpunda.ops.optimizer.multi_cuda:cuda_sources")
register_source_provider("rtc_examples", "gpunda.rtc:cuda_sources")
register_source_provider("fusion", "gpunda._testing.fusion_models:cuda_sources")
