"""Which GPU extra fits this machine: ``python -m gpunda info``'s CUDA lines.

CuPy ships one wheel per CUDA major version (``cupy-cuda12x``, ``cupy-cuda13x``) and gpunda
has one extra for each (``gpunda[gpu-cuda12]``, ``gpunda[gpu-cuda13]``; ``gpunda[gpu]`` is
the CUDA 12 one). A driver runs CUDA builds up to the version it reports (NVML's
``nvmlSystemGetCudaDriverVersion``) and every older one, never a newer one: CUDA 13 needs a
driver >= 580, CUDA 12 one >= 525. ``advise`` turns (driver's CUDA, installed CuPy
packages, CuPy's runtime) into the advice, with no I/O, so it is tested over every case;
``report`` gathers the facts and prints it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field

# CUDA major version -> gpunda's extra for it (pyproject.toml's optional-dependencies)
EXTRAS = {12: "gpu-cuda12", 13: "gpu-cuda13"}
_DRIVER_FLOOR = {12: 525, 13: 580}      # the Linux driver each CUDA major needs


@dataclass
class Advice:
    """``extra``: the extra that matches the driver (None: none does, or no driver);
    ``fits``: whether the installed CuPy runs on this driver (None: cannot tell);
    ``lines``: what ``info`` prints."""
    extra: str | None
    fits: bool | None
    lines: list = field(default_factory=list)


def cupy_build(package):
    """The CUDA a CuPy distribution name was built for: ``(major, minor or None)``,
    ``"rocm"`` for an AMD build, or None when the name does not say (``cupy`` from source)."""
    name = re.sub(r"[-_.]+", "-", package.lower())
    m = re.fullmatch(r"cupy-cuda(\d+)x", name)
    if m:
        return int(m.group(1)), None
    m = re.fullmatch(r"cupy-cuda(\d+)(\d)", name)     # CuPy < 10: cupy-cuda102, cupy-cuda117
    if m:
        return int(m.group(1)), int(m.group(2))
    if name.startswith("cupy-rocm"):
        return "rocm"
    return None


def _install(extra):
    return f"pip install 'gpunda[{extra}]'"


def advise(driver_cuda, cupy_packages, runtime_cuda=None, driver_why=""):
    """The advice for a driver that runs CUDA ``driver_cuda`` ((major, minor), or None with
    ``driver_why`` when there is no driver/NVML), the installed CuPy distributions
    ``cupy_packages`` ([(name, version)], from importlib.metadata) and, when a GPU is
    usable, the CUDA runtime CuPy reports (``runtime_cuda``, (major, minor) or None)."""
    newest = max(EXTRAS)
    lines = []
    if driver_cuda is None:
        lines.append(f"CUDA driver: none found ({driver_why or 'no NVML'})")
        extra = None
        lines.append("GPU extra: none without an NVIDIA driver; on a GPU machine "
                     + " or ".join(f"'gpunda[{EXTRAS[k]}]' (CUDA {k}, driver >= {_DRIVER_FLOOR[k]})"
                                   for k in sorted(EXTRAS, reverse=True)))
    else:
        major, minor = driver_cuda
        lines.append(f"CUDA driver: runs CUDA {major}.{minor} and older (NVML)")
        if major < min(EXTRAS):
            extra = None
            lines.append(f"GPU extra: none fits: CuPy for CUDA {min(EXTRAS)} or newer needs a "
                         f"newer NVIDIA driver (>= {_DRIVER_FLOOR[min(EXTRAS)]})")
        else:
            extra = EXTRAS[min(major, newest)]
            lines.append(f"GPU extra: gpunda[{extra}] ({_install(extra)})")

    if not cupy_packages:
        lines.append("CuPy: not installed" + (f"; {_install(extra)}" if extra else ""))
        return Advice(extra, False if driver_cuda is not None else None, lines)
    names = ", ".join(f"{n} {v}" for n, v in cupy_packages)
    if len(cupy_packages) > 1:
        lines.append(f"CuPy: several packages installed ({names}); they overwrite each other: "
                     "pip uninstall them all, then "
                     + (_install(extra) if extra else "install the one that fits"))
        return Advice(extra, False, lines)

    name, version = cupy_packages[0]
    build = cupy_build(name)
    if build == "rocm":
        lines.append(f"CuPy: {names} is a ROCm (AMD) build; gpunda's GPU extras are CUDA's")
        return Advice(extra, False, lines)
    built = build[0] if build else None
    if runtime_cuda is not None:            # what CuPy runs on beats what its name says
        built = runtime_cuda[0]
        where = f"CUDA runtime {runtime_cuda[0]}.{runtime_cuda[1]}"
    elif built is not None:
        where = f"built for CUDA {built}"
    else:
        where = "built for a CUDA its package name does not tell"
    head = f"CuPy: {names} ({where})"
    if driver_cuda is None:
        lines.append(f"{head}: cannot run without an NVIDIA driver")
        return Advice(extra, None, lines)
    if built is None:
        lines.append(f"{head}: cannot tell whether it fits; `python -m gpunda info` on a "
                     "usable GPU reads its CUDA runtime")
        return Advice(extra, None, lines)
    if built > driver_cuda[0]:
        fix = (f"pip uninstall {name} && {_install(extra)}" if extra
               else f"update the NVIDIA driver to >= {_DRIVER_FLOOR.get(built, '?')}")
        lines.append(f"{head}: does NOT fit this driver (CUDA {driver_cuda[0]}.{driver_cuda[1]});"
                     f" {fix}")
        return Advice(extra, False, lines)
    if extra is not None and built < int(extra.rsplit("cuda", 1)[1]):
        lines.append(f"{head}: fits (the driver also runs older CUDA); gpunda[{extra}] matches "
                     "the driver")
    else:
        lines.append(f"{head}: fits")
    return Advice(extra, True, lines)


def installed_cupy():
    """[(distribution name, version)] of every installed CuPy distribution (``cupy``,
    ``cupy-cudaNNx``, ``cupy-rocm-*``), read from the package metadata: CuPy is not imported."""
    from importlib import metadata
    found = {}
    for dist in metadata.distributions():
        name = dist.metadata.get("Name") or ""
        norm = re.sub(r"[-_.]+", "-", name.lower())
        if norm == "cupy" or norm.startswith(("cupy-cuda", "cupy-rocm")):
            found.setdefault(norm, dist.version)
    return sorted(found.items())


def report():
    """The lines ``python -m gpunda info`` prints about the driver, the extra and CuPy."""
    from gpunda.backends import discovery
    driver, why = discovery.driver_cuda_version()
    return advise(driver, installed_cupy(), discovery.cupy_runtime_cuda(), why).lines
