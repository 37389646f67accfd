"""``python -m gpunda run [-m module | script] [args]``: run MXNet code unchanged on gpunda.

The mxnet alias is installed (see gpunda/_alias.py), then the script runs as
``python script.py args`` would run it: as ``__main__``, with ``sys.argv ==
[script, *args]``, the script's folder (symlinks resolved) first on
``sys.path``, and the same exit status and traceback (no frame of gpunda's in
it). ``GPUNDA_AS_MXNET=1`` is put into the environment so that Python child
processes (multiprocessing workers, subprocesses) get the alias too where the
start-up hook is installed.
"""
from __future__ import annotations

import argparse
import builtins
import io
import os
import signal
import sys
import types

__all__ = ["main"]

_USAGE = "python -m gpunda run [-h] (script | -m module) [args ...]"


def _parser():
    p = argparse.ArgumentParser(
        prog="python -m gpunda run", usage=_USAGE,
        description="Run a Python script (or module) in which `import mxnet` gives gpunda, "
                    "as `python script.py args` would run it: same sys.argv, __main__, "
                    "sys.path[0], exit status and traceback.")
    p.add_argument("script", nargs="?",
                   help="path of the script to run (a .py file, or a folder or zip file "
                        "with a __main__.py); required unless -m is given")
    p.add_argument("-m", dest="module", metavar="module",
                   help="run this module as `python -m module` would (default: none)")
    p.add_argument("args", nargs=argparse.REMAINDER,
                   help="arguments passed on to the script as sys.argv[1:] (default: none)")
    return p


def _split(argv):
    """(module or None, script or None, args): everything after the script (or the
    module name) belongs to it, options of its own included."""
    if argv and argv[0] in ("-h", "--help"):
        _parser().print_help()
        sys.exit(0)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if argv and argv[0] == "-m":
        if len(argv) < 2:
            _parser().error("-m needs a module name")
        return argv[1], None, argv[2:]
    if argv and argv[0].startswith("-m") and len(argv[0]) > 2:
        return argv[0][2:], None, argv[1:]       # python's own -mmodule spelling
    if not argv or argv[0].startswith("-"):
        _parser().error("give the script to run (or -m module)")
    return None, argv[0], argv[1:]


def _program():
    return (getattr(sys, "orig_argv", None) or [sys.executable])[0]


def _fresh_main(file=None):
    main = types.ModuleType("__main__")
    main.__builtins__ = builtins
    if file is not None:
        main.__file__ = file
    main.__cached__ = None
    sys.modules["__main__"] = main
    return main


def _report_and_exit(exc, tb):
    """What the interpreter does with an exception that leaves the script."""
    exc.__traceback__ = tb
    sys.excepthook(type(exc), exc, tb)
    if isinstance(exc, KeyboardInterrupt):
        # python ends with the signal itself, so callers see "killed by SIGINT"
        for stream in (sys.stdout, sys.stderr):
            if stream is not None:
                stream.flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    sys.exit(1)


def _run_file(script, args):
    path = os.path.abspath(script)
    if os.path.isdir(path) or (os.path.isfile(path) and _is_zip(path)):
        return _run_package_path(script, path, args)
    try:
        with io.open_code(path) as f:
            source = f.read()
    except OSError as e:
        print(f"{_program()}: can't open file {path!r}: [Errno {e.errno}] {e.strerror}",
              file=sys.stderr)
        sys.exit(2)
    sys.argv[:] = [script, *args]
    sys.path[0] = os.path.dirname(os.path.realpath(path))
    main = _fresh_main(path)
    from importlib.machinery import SourceFileLoader
    main.__loader__ = SourceFileLoader("__main__", path)
    main.__spec__ = None
    main.__package__ = None
    try:
        code = compile(source, path, "exec", dont_inherit=True)
    except SyntaxError as e:
        _report_and_exit(e, None)
    try:
        exec(code, main.__dict__)
    except SystemExit:
        raise
    except BaseException as e:     # noqa: BLE001 -- reported as python reports it
        _report_and_exit(e, e.__traceback__.tb_next)


def _is_zip(path):
    import zipfile
    return zipfile.is_zipfile(path)


def _run_package_path(script, path, args):
    """A folder or zip file holding __main__.py, as python runs it (through runpy)."""
    import runpy
    sys.argv[:] = [script, *args]
    sys.path[0] = path
    _fresh_main()
    try:
        runpy.run_path(path, run_name="__main__")
    except SystemExit:
        raise
    except BaseException as e:     # noqa: BLE001
        _report_and_exit(e, _from_runpy(e.__traceback__))


def _from_runpy(tb):
    """The traceback from runpy's first frame on, as ``python -m``/``python dir`` show it."""
    t = tb
    while t is not None and "runpy" not in t.tb_frame.f_code.co_filename:
        t = t.tb_next
    return t if t is not None else tb.tb_next


def _run_module(module, args):
    import runpy
    sys.argv[:] = ["-m", *args]     # runpy puts the module's path in argv[0]
    sys.path[0] = os.getcwd()
    _fresh_main()
    try:
        # what `python -m` itself calls: errors such as "No module named x" exit 1
        runpy._run_module_as_main(module, alter_argv=True)
    except SystemExit:
        raise
    except BaseException as e:     # noqa: BLE001
        _report_and_exit(e, _from_runpy(e.__traceback__))


def main(argv):
    """Entry of ``python -m gpunda run``; never returns normally when the script
    raises (the exit status is the script's)."""
    module, script, args = _split(list(argv))
    from gpunda._tools.alias import ENV_VAR, install_mxnet_alias
    install_mxnet_alias(reason="python -m gpunda run")
    os.environ[ENV_VAR] = "1"
    if module is not None:
        _run_module(module, args)
    else:
        _run_file(script, args)
    return 0
