"""``python -m gpunda nvrtc-check``: compile every CUDA source gpunda holds or generates with
NVRTC, for each GPU architecture checked, without a GPU or a driver.

NVRTC is a plain shared library (libnvrtc) that the ``nvidia-cuda-nvrtc`` (CUDA 13) and
``nvidia-cuda-nvrtc-cu12`` (CUDA 12) wheels ship; the headers the sources include
(``cuda_fp16.h``) come from the ``nvidia-cuda-runtime`` / ``nvidia-cuda-runtime-cu12``
wheels. The library is loaded through ``ctypes`` (a dozen C functions; cuda-python would add a
package for nothing more), lazily, when the check runs. Each source is compiled to a cubin
(``-arch=sm_XX``), so ptxas runs too. The sources come from the registry in
``_core/cuda_sources.py`` (``register_source_provider``), re-exported here. Where CuPy is
installed, its headers (``cupy/_core/include``) are on the include path too, for generated
code written against them.
"""
from __future__ import annotations

import argparse
import ctypes
import glob
import os
import sys
from typing import NamedTuple

from gpunda._core.cuda_sources import (CudaSource, collect_sources,  # noqa: F401 (re-exported)
                                       register_source_provider, source_providers)

__all__ = ["Toolkit", "find_toolkits", "compile_source", "check", "main",
           "register_source_provider", "CudaSource"]

ARCHS = (80, 90, 100)   # Ampere, Hopper, Blackwell (datacenter)
_CUPY_INC = [()]        # set by check(): CuPy's include folders, when CuPy is installed

# (library under a site-packages folder, its include folder, the runtime headers' folder)
_WHEEL_LAYOUTS = (
    ("nvidia/cu13/lib/libnvrtc.so.13", "nvidia/cu13/include", "nvidia/cu13/include"),
    ("nvidia/cuda_nvrtc/lib/libnvrtc.so.12", "nvidia/cuda_nvrtc/include",
     "nvidia/cuda_runtime/include"),
)


class Toolkit(NamedTuple):
    """One NVRTC found: its library path, version, supported archs and include folders."""
    lib_path: str
    version: tuple
    archs: tuple
    include_dirs: tuple
    lib: object


class CompileResult(NamedTuple):
    ok: bool
    log: str


def _load(path):
    lib = ctypes.CDLL(path)
    vp = ctypes.c_void_p
    cp = ctypes.c_char_p
    ip = ctypes.POINTER(ctypes.c_int)
    sig = {
        "nvrtcVersion": [ip, ip],
        "nvrtcGetNumSupportedArchs": [ip],
        "nvrtcGetSupportedArchs": [ip],
        "nvrtcCreateProgram": [ctypes.POINTER(vp), cp, cp, ctypes.c_int,
                               ctypes.POINTER(cp), ctypes.POINTER(cp)],
        "nvrtcAddNameExpression": [vp, cp],
        "nvrtcCompileProgram": [vp, ctypes.c_int, ctypes.POINTER(cp)],
        "nvrtcGetProgramLogSize": [vp, ctypes.POINTER(ctypes.c_size_t)],
        "nvrtcGetProgramLog": [vp, ctypes.c_char_p],
        "nvrtcGetCUBINSize": [vp, ctypes.POINTER(ctypes.c_size_t)],
        "nvrtcDestroyProgram": [ctypes.POINTER(vp)],
    }
    for name, args in sig.items():
        f = getattr(lib, name)
        f.argtypes, f.restype = args, ctypes.c_int
    lib.nvrtcGetErrorString.argtypes, lib.nvrtcGetErrorString.restype = [ctypes.c_int], cp
    return lib


def _toolkit(path, include_dirs):
    lib = _load(path)
    major, minor = ctypes.c_int(), ctypes.c_int()
    lib.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    n = ctypes.c_int()
    lib.nvrtcGetNumSupportedArchs(ctypes.byref(n))
    arr = (ctypes.c_int * n.value)()
    lib.nvrtcGetSupportedArchs(arr)
    incs = tuple(d for d in include_dirs if os.path.isdir(d))
    return Toolkit(path, (major.value, minor.value), tuple(arr), incs, lib)


def _candidates():
    """``(libnvrtc path, include dirs)``: ``$GPUNDA_NVRTC_LIBS`` (paths joined by os.pathsep,
    each library's ``../include`` its include folder), then the wheels' layouts on sys.path."""
    seen = set()
    env = os.environ.get("GPUNDA_NVRTC_LIBS")
    for p in (env.split(os.pathsep) if env else ()):
        if p and os.path.isfile(p):
            seen.add(os.path.realpath(p))
            yield p, (os.path.join(os.path.dirname(os.path.dirname(p)), "include"),)
    for base in sys.path:
        if not base or not os.path.isdir(os.path.join(base, "nvidia")):
            continue
        for lib, inc, rt_inc in _WHEEL_LAYOUTS:
            for p in glob.glob(os.path.join(base, lib)):
                rp = os.path.realpath(p)
                if rp not in seen:
                    seen.add(rp)
                    yield p, (os.path.join(base, rt_inc), os.path.join(base, inc))


def find_toolkits():
    """Every NVRTC found (``_candidates``), loaded; ``(toolkits, problems)``."""
    found, problems = [], []
    for path, incs in _candidates():
        try:
            found.append(_toolkit(path, incs))
        except (OSError, AttributeError) as e:
            problems.append(f"{path}: cannot load: {e}")
    return found, problems


def _cupy_include():
    """CuPy's own header folders (``cupy/_core/include`` and its CCCL: what its generated
    ElementwiseKernel and ReductionKernel code includes), found without importing CuPy;
    () without CuPy."""
    import importlib.util
    try:
        spec = importlib.util.find_spec("cupy")
    except (ImportError, ValueError):
        return None
    for base in (spec.submodule_search_locations or ()) if spec else ():
        d = os.path.join(base, "_core", "include")
        if os.path.isdir(d):
            # and the CCCL it bundles (thrust, cub, libcudacxx), as CuPy passes them
            cccl = [os.path.join(d, "cupy", "_cccl", x) for x in ("libcudacxx", "cub", "thrust")]
            return (d,) + tuple(x for x in cccl if os.path.isdir(x))
    return ()


def _err(lib, rc):
    return lib.nvrtcGetErrorString(rc).decode()


def compile_source(tk, src, arch):
    """Compile ``src`` (a CudaSource) for ``sm_<arch>`` with toolkit ``tk`` to a cubin."""
    lib = tk.lib
    prog = ctypes.c_void_p()
    rc = lib.nvrtcCreateProgram(ctypes.byref(prog), src.code.encode(),
                                f"{src.name}.cu".encode(), 0, None, None)
    if rc:
        return CompileResult(False, f"nvrtcCreateProgram: {_err(lib, rc)}")
    try:
        for ne in src.name_expressions:
            rc = lib.nvrtcAddNameExpression(prog, ne.encode())
            if rc:
                return CompileResult(False, f"nvrtcAddNameExpression({ne}): {_err(lib, rc)}")
        incs = tk.include_dirs + _CUPY_INC[0]
        opts = [f"-arch=sm_{arch}"] + [f"-I{d}" for d in incs] + list(src.options)
        c_opts = (ctypes.c_char_p * len(opts))(*[o.encode() for o in opts])
        rc = lib.nvrtcCompileProgram(prog, len(opts), c_opts)
        size = ctypes.c_size_t()
        lib.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
        buf = ctypes.create_string_buffer(size.value + 1)
        lib.nvrtcGetProgramLog(prog, buf)
        log = buf.value.decode(errors="replace").strip()
        if rc:
            return CompileResult(False, f"{_err(lib, rc)}\n{log}")
        cub = ctypes.c_size_t()
        rc = lib.nvrtcGetCUBINSize(prog, ctypes.byref(cub))
        if rc or cub.value == 0:
            return CompileResult(False, f"no cubin for sm_{arch}: {_err(lib, rc)}\n{log}")
        return CompileResult(True, log)
    finally:
        lib.nvrtcDestroyProgram(ctypes.byref(prog))


def check(toolkits, archs=ARCHS, providers=None, out=print):
    """Compile every registered source with every toolkit for each of ``archs`` the toolkit
    supports (an arch it does not know is reported, not compiled); returns
    ``(compiled, failures)``, failures as ``(toolkit, arch, source name, log)``."""
    sources = collect_sources(providers)
    _CUPY_INC[0] = _cupy_include()
    compiled, failures = 0, []
    for tk in toolkits:
        ver = "%d.%d" % tk.version
        todo = [a for a in archs if a in tk.archs]
        skipped = [a for a in archs if a not in tk.archs]
        out(f"NVRTC {ver} ({tk.lib_path}): sm_{', sm_'.join(map(str, todo)) or '-'}"
            + (f"; not supported by this NVRTC: sm_{', sm_'.join(map(str, skipped))}"
               if skipped else ""))
        for pname, src in sources:
            if src.code is None:
                failures.append((ver, None, src.name, src.options[0]))
                continue
            for arch in todo:
                r = compile_source(tk, src, arch)
                if r.ok:
                    compiled += 1
                else:
                    failures.append((ver, arch, f"{pname}/{src.name}", r.log))
        out(f"  {len(sources)} sources from {len({p for p, _ in sources})} providers")
    for ver, arch, name, log in failures:
        out(f"FAILED: NVRTC {ver} sm_{arch}: {name}\n{log}")
    return compiled, failures


def _parser():
    p = argparse.ArgumentParser(
        prog="python -m gpunda nvrtc-check",
        description="Compile every CUDA source gpunda holds or generates (the registry of "
        "gpunda._core.cuda_sources) with NVRTC for each architecture, without a GPU. NVRTC is "
        "found in the nvidia-cuda-nvrtc(-cu12) wheels on sys.path, or in $GPUNDA_NVRTC_LIBS.")
    p.add_argument("--arch", type=int, action="append",
                   help="an sm_ number to check (repeatable; default 80, 90 and 100)")
    p.add_argument("--provider", action="append",
                   help="only the sources of this provider (repeatable; default: every "
                   "registered one)")
    p.add_argument("--require", type=int, default=1, metavar="N",
                   help="fail unless at least N NVRTC libraries are found (default 1)")
    p.add_argument("--list", action="store_true",
                   help="list the sources and exit, compiling nothing (default: compile them)")
    return p


def main(argv=()):
    """The CLI; 0 when every source compiled for every arch each toolkit supports."""
    args = _parser().parse_args(list(argv))
    import gpunda  # noqa: F401 -- modules that register providers at import
    if args.list:
        for pname, src in collect_sources(args.provider):
            print(f"{pname}: {src.name}" + (f" {list(src.name_expressions)}"
                                             if src.name_expressions else ""))
        return 0
    toolkits, problems = find_toolkits()
    for p in problems:
        print(p)
    if len(toolkits) < args.require:
        print(f"nvrtc-check: found {len(toolkits)} NVRTC libraries, {args.require} required "
              f"(pip install nvidia-cuda-nvrtc nvidia-cuda-runtime, or set GPUNDA_NVRTC_LIBS)")
        return 1
    compiled, failures = check(toolkits, tuple(args.arch or ARCHS), args.provider)
    print(f"nvrtc-check: {compiled} compiled, {len(failures)} failed")
    return 1 if failures else 0
