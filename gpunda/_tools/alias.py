"""``import mxnet`` gives gpunda: the alias behind ``python -m gpunda run`` and the opt-ins.

Once :func:`install_mxnet_alias` has run, ``import mxnet`` returns a small root
module (``mxnet.__gpunda__ is True``, ``mxnet.__version__ == "1.9.1"``, the MXNet
API level gpunda follows) whose other attributes are gpunda's, and every
``mxnet.X.Y`` import returns the very module object ``gpunda.X.Y`` (so
``mxnet.nd.NDArray is gpunda.nd.NDArray``). Submodules resolve lazily, through
a meta-path finder, when first imported.

Precedence (NOTE [mxnet alias precedence]): the alias is opt-in. Without it
``import mxnet`` finds whatever is installed. With it (``python -m gpunda run``,
``GPUNDA_AS_MXNET=1`` at start-up, or the call) the alias wins over an installed
MXNet, and says so in one warning line naming both paths, so nothing is
shadowed silently.
"""
from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import logging
import os
import sys
import types

__all__ = ["install_mxnet_alias", "uninstall_mxnet_alias", "is_alias", "MXNET_API_VERSION",
           "ENV_VAR"]

MXNET_API_VERSION = "1.9.1"
ENV_VAR = "GPUNDA_AS_MXNET"
_ROOT = "mxnet"
_PREFIX = _ROOT + "."
_TARGET = "gpunda"

_log = logging.getLogger("gpunda")


# The standard-library modules that `import mxnet` (1.9.1) leaves imported and that code
# reaches as attributes (``multiprocessing.pool.ThreadPool`` after a bare
# ``import multiprocessing``); the alias loads them at the first `import mxnet`, never
# `import gpunda` (../shared/mxnet-suite/surface-1.9.1.json, outside_modules_on_import).
_MXNET_IMPORT_SIDE_MODULES = (
    "argparse", "array", "base64", "binascii", "bz2", "calendar", "configparser", "csv",
    "ctypes", "dataclasses", "difflib", "email", "email.charset", "email.errors",
    "email.feedparser", "email.header", "email.headerregistry", "email.message",
    "email.parser", "email.utils", "encodings.idna", "gc", "getopt", "gettext", "glob",
    "gzip", "hashlib", "heapq", "hmac", "http", "http.client", "http.cookiejar", "http.cookies",
    "importlib.metadata", "importlib.resources", "ipaddress", "locale", "logging", "lzma",
    "mimetypes", "multiprocessing", "multiprocessing.connection", "multiprocessing.context",
    "multiprocessing.pool", "multiprocessing.process", "multiprocessing.queues",
    "multiprocessing.reduction", "multiprocessing.resource_sharer", "multiprocessing.util",
    "pathlib", "pickle", "platform", "pprint", "pydoc", "queue", "quopri", "secrets", "select",
    "selectors", "shutil", "signal", "socket", "ssl", "stringprep", "subprocess", "sysconfig",
    "tarfile", "tempfile", "threading", "unicodedata", "unittest", "urllib", "urllib.error",
    "urllib.parse", "urllib.request", "urllib.response", "uuid", "zipfile", "zlib")
if os.name == "posix":
    _MXNET_IMPORT_SIDE_MODULES += ("fcntl", "grp", "pwd")


def _load_import_side_modules():
    """Import what real MXNet's import leaves behind (see _MXNET_IMPORT_SIDE_MODULES); a
    module this Python lacks is skipped."""
    for name in _MXNET_IMPORT_SIDE_MODULES:
        try:
            importlib.import_module(name)
        except ImportError:
            pass


def _gpunda():
    return importlib.import_module(_TARGET)


class _MxnetAlias(types.ModuleType):
    """The ``mxnet`` root module: its own version and identity, gpunda's names."""

    def __getattr__(self, name):
        target = _gpunda()
        try:
            return getattr(target, name)
        except AttributeError:
            pass
        if not name.startswith("__"):
            # a gpunda submodule not imported yet (mx.gluon before any import of it)
            try:
                return importlib.import_module(_PREFIX + name)
            except ModuleNotFoundError as e:
                if e.name != _PREFIX + name:
                    raise
        # every name of MXNet 1.9.1's own surface resolves above: what is left MXNet lacks too
        raise AttributeError(f"module 'mxnet' (gpunda {target.__version__}) has no attribute "
                             f"{name!r}")

    def __dir__(self):
        return sorted(set(self.__dict__) | set(dir(_gpunda())))

    def __repr__(self):
        target = _gpunda()
        return (f"<module 'mxnet' (gpunda {target.__version__}, MXNet {MXNET_API_VERSION} API) "
                f"from {os.path.dirname(target.__file__)!r}>")


def _new_root():
    target = _gpunda()
    root = _MxnetAlias(_ROOT, f"gpunda {target.__version__} standing in for MXNet "
                              f"{MXNET_API_VERSION}; the names below are gpunda's.")
    root.__version__ = MXNET_API_VERSION
    root.__gpunda__ = True
    root.__gpunda_version__ = target.__version__
    root.__file__ = target.__file__
    root.__path__ = []          # a package, so that `import mxnet.X` is asked of the finder
    return root


def _resolve(sub):
    """The gpunda module for dotted ``sub`` ('ndarray.sparse', 'nd'), or None."""
    full = f"{_TARGET}.{sub}"
    try:
        return importlib.import_module(full)
    except ModuleNotFoundError as e:
        # only "this module (or a parent of it) does not exist"; an import that
        # fails inside an existing gpunda module is a bug to surface
        if e.name is None or not (full == e.name or full.startswith(e.name + ".")):
            raise
    # gpunda exposes some modules as attributes only (gpunda.nd is gpunda.ndarray)
    obj = _gpunda()
    for part in sub.split("."):
        obj = getattr(obj, part, None)
        if not isinstance(obj, types.ModuleType):
            return None
    name = obj.__name__
    # never a foreign module that happens to be an attribute (gpunda.numpy is ours,
    # but `import numpy` inside a gpunda module leaves e.g. np there)
    return obj if name == _TARGET or name.startswith(_TARGET + ".") else None


class _AliasLoader(importlib.abc.Loader):
    """Hands back a module that is already imported, leaving its own spec on it."""

    def __init__(self, module):
        self._module = module
        self._spec = getattr(module, "__spec__", None)

    def create_module(self, spec):
        return self._module

    def exec_module(self, module):
        # the import system has just set module.__spec__ to the mxnet.* spec;
        # give back gpunda's own, so gpunda.X keeps describing itself
        if self._spec is not None:
            module.__spec__ = self._spec


class _MxnetFinder(importlib.abc.MetaPathFinder):
    """Maps ``mxnet`` to the alias root and ``mxnet.X.Y`` to ``gpunda.X.Y``."""

    def __init__(self, root):
        self.root = root
        self.notice = None      # said once, at the first `import mxnet`
        self.side_modules_loaded = False

    def find_spec(self, fullname, path=None, target=None):
        if fullname == _ROOT:
            if not self.side_modules_loaded:
                self.side_modules_loaded = True
                _load_import_side_modules()
            if self.notice:
                _log.warning("%s", self.notice)
                self.notice = None
            return importlib.util.spec_from_loader(_ROOT, _AliasLoader(self.root),
                                                   is_package=True)
        if not fullname.startswith(_PREFIX):
            return None
        module = _resolve(fullname[len(_PREFIX):])
        if module is None:
            # gpunda holds every module of MXNet 1.9.1's wheel: one it lacks, MXNet lacks too
            raise ModuleNotFoundError(f"No module named {fullname!r}", name=fullname)
        return importlib.util.spec_from_loader(fullname, _AliasLoader(module),
                                               is_package=hasattr(module, "__path__"))


def _installed_finder():
    for f in sys.meta_path:
        if isinstance(f, _MxnetFinder):
            return f
    return None


def is_alias(module):
    """True when ``module`` is gpunda's ``mxnet`` alias (not a real MXNet)."""
    return getattr(module, "__gpunda__", False) is True


def _real_mxnet_location():
    """Where a real ``mxnet`` package would be imported from, or None."""
    try:
        spec = importlib.machinery.PathFinder.find_spec(_ROOT)
    except (ImportError, ValueError):
        return None
    if spec is None:
        return None
    if spec.origin and spec.origin not in ("namespace", "built-in"):
        return os.path.dirname(spec.origin) if spec.origin.endswith("__init__.py") \
            else spec.origin
    locs = list(spec.submodule_search_locations or ())
    return locs[0] if locs else None


def install_mxnet_alias(reason="install_mxnet_alias()"):
    """Make ``import mxnet`` (and ``mxnet.X.Y``) give gpunda; call it before the first import.

    Args:
        reason: what asked for the alias, named in the notice printed when a real
            MXNet is installed too (the alias then wins; see the module docstring).

    Returns:
        The ``mxnet`` alias module (``mxnet.__gpunda__ is True``). Calling again
        returns the same module.

    Raises:
        GpundaError: a real ``mxnet`` was already imported in this process; two
            ``mxnet`` packages cannot share one interpreter.

    Example::

        import gpunda
        gpunda.install_mxnet_alias()
        import mxnet as mx          # gpunda, mx.nd is gpunda.nd
    """
    _install(reason)
    return importlib.import_module(_ROOT)


def _install(reason):
    """Put the finder in place (once); a real MXNet installed too gets the notice, said
    at the first ``import mxnet``, so processes that never import it stay quiet."""
    finder = _installed_finder()
    loaded = sys.modules.get(_ROOT)
    if finder is not None and loaded in (None, finder.root):
        return finder
    if loaded is not None and not is_alias(loaded):
        from gpunda.base import GpundaError
        raise GpundaError(f"{reason}: a real MXNet is already imported (from "
                          f"{getattr(loaded, '__file__', '?')}); install the gpunda alias before "
                          f"the first `import mxnet`")
    if finder is None:
        finder = _MxnetFinder(_new_root())
        sys.meta_path.insert(0, finder)
    real = _real_mxnet_location()
    if real is not None:
        target = _gpunda()
        finder.notice = (f"gpunda: `import mxnet` gives gpunda {target.__version__} "
                         f"({os.path.dirname(target.__file__)}), not the MXNet installed at "
                         f"{real} (asked for by {reason})")
    return finder


def uninstall_mxnet_alias():
    """Undo :func:`install_mxnet_alias`: drop the finder and the ``mxnet*`` entries of
    ``sys.modules`` that are the alias's (gpunda's own modules stay imported)."""
    finder = _installed_finder()
    if finder is None:
        return
    sys.meta_path.remove(finder)
    for name, mod in list(sys.modules.items()):
        if (name == _ROOT or name.startswith(_PREFIX)) and (
                mod is finder.root or getattr(mod, "__name__", "").startswith(_TARGET)):
            del sys.modules[name]


def env_requests_alias(environ=os.environ):
    """True when ``GPUNDA_AS_MXNET`` asks for the alias (set, and not 0/false/no/off)."""
    return environ.get(ENV_VAR, "").strip().lower() not in ("", "0", "false", "no", "off")


def install_from_env():
    """Start-up hook (the installed ``gpunda_mxnet_alias.pth``): install the alias when
    ``GPUNDA_AS_MXNET`` asks for it. A failure is reported, never fatal to start-up."""
    if not env_requests_alias():
        return
    try:
        _install(f"{ENV_VAR}={os.environ.get(ENV_VAR)}")
    except Exception as e:      # noqa: BLE001 -- site start-up must go on
        print(f"gpunda: {ENV_VAR} is set but the mxnet alias could not be installed: "
              f"{type(e).__name__}: {e}", file=sys.stderr)
