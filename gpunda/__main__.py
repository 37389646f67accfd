"""Command line: ``python -m gpunda {info,demo,inspect,run,im2rec,export-onnx,nvrtc-check}``."""
from __future__ import annotations

import argparse
import sys


def info(argv=()):
    """Print versions, GPUs found and which default device is chosen, and why."""
    import platform

    import numpy
    import scipy

    import gpunda
    from gpunda.backends import discovery
    from gpunda.context import default_device_choice

    print(f"gpunda {gpunda.__version__}  (python {platform.python_version()}, "
          f"{platform.machine()})")
    print(f"numpy {numpy.__version__}  scipy {scipy.__version__}  "
          f"cupy {discovery.cupy_version() or 'not installed'}")
    n, why = discovery.probe()
    if n:
        print(f"GPUs: {n}")
        for g in discovery.list_gpus():
            tot = f"{g.total_bytes / 2**30:.1f} GiB" if g.total_bytes else "?"
            free = f"{g.free_bytes / 2**30:.1f} GiB free" if g.free_bytes is not None else ""
            print(f"  gpu({g.ordinal}): {g.name}, {tot} {free}"
                  + (f" [nvml {g.nvml_index}]" if g.nvml_index is not None else ""))
    else:
        print(f"GPUs: none ({why})")
    from gpunda._tools import gpu_extra
    for line in gpu_extra.report():
        print(line)
    try:
        ctx, reason = default_device_choice()
        print(f"default device: {ctx} ({reason})")
    except gpunda.GpundaError as e:
        print(f"default device: error: {e}")
        return 1
    feats = gpunda.runtime.Features()
    print("features: " + ", ".join(f"{k}={'on' if f.enabled else 'off'}" for k, f in feats.items()))
    return 0


_COMMANDS = ("info", "demo", "inspect", "run", "im2rec", "export-onnx", "nvrtc-check")


def _info_parser():
    return argparse.ArgumentParser(
        prog="python -m gpunda info", description="Print the versions of gpunda, NumPy, SciPy "
        "and CuPy, the GPUs found, the CUDA version the NVIDIA driver runs (NVML) and which GPU "
        "extra (gpunda[gpu-cuda12] or gpunda[gpu-cuda13]) fits it and the installed CuPy, which "
        "default device is chosen and why, and the features (mx.runtime.Features()). Takes no options; GPUNDA_DEFAULT_DEVICE and "
        "GPUNDA_REQUIRE_GPU change the device chosen.")


def main(argv=None):
    """Entry point of ``python -m gpunda``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="python -m gpunda",
                                     description="gpunda: MXNet 1.x's imperative core on CuPy/NumPy",
                                     epilog="`python -m gpunda COMMAND --help` shows the options "
                                            "of each command.")
    parser.add_argument("command", choices=list(_COMMANDS),
                        help="info: versions and devices; demo: train a small CNN on digits; "
                             "inspect: show an NDArray file or symbol JSON; "
                             "run: run a script in which `import mxnet` gives gpunda; "
                             "im2rec: make image lists and .rec datasets (MXNet's tool); "
                             "export-onnx: an MXNet checkpoint to ONNX; "
                             "nvrtc-check: compile gpunda's CUDA sources with NVRTC, no GPU")
    if not argv or argv[0] in ("-h", "--help"):
        parser.print_help()
        return 0 if argv else 2
    cmd, rest = argv[0], argv[1:]
    if cmd not in _COMMANDS:
        parser.error(f"unknown command {cmd!r}")
    if cmd == "run":
        # before any logging set-up of ours: the script configures logging itself
        from gpunda._tools import runscript as _runscript
        return _runscript.main(rest)
    if cmd == "info":
        _info_parser().parse_args(rest)
    import logging
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        if cmd == "info":
            return info(rest)
        if cmd == "demo":
            from gpunda._tools import demo
            return demo.main(rest)
        if cmd == "im2rec":
            from gpunda._tools import im2rec as _im2rec
            return _im2rec.main(rest)
        if cmd == "nvrtc-check":
            from gpunda._tools import nvrtc_check
            return nvrtc_check.main(rest)
        if cmd == "export-onnx":
            from gpunda.onnx import _cli
            return _cli.main(rest)
        from gpunda._tools import inspect as _inspect
        return _inspect.main(rest)
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # output piped into `head` and closed early: not an error of ours
        import os
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except Exception as e:   # noqa: BLE001 -- a CLI reports, it does not dump a traceback
        from gpunda.base import GpundaError
        if isinstance(e, GpundaError):
            print(f"error: {e}", file=sys.stderr)
            return 1
        raise


if __name__ == "__main__":
    sys.exit(main())
