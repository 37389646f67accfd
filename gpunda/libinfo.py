"""MXNet's ``mx.libinfo``: where libmxnet lives. gpunda is pure Python and has no library."""
from __future__ import annotations

from gpunda.base import NotImplementedForGpunda

__all__ = ["find_lib_path", "find_include_path", "find_conf_path", "__version__"]

#: the MXNet release whose API gpunda implements (``mx.__version__`` is gpunda's own)
__version__ = "1.9.1"


def find_lib_path(prefix="libmxnet"):
    """Not supported: gpunda has no shared library to find."""
    raise NotImplementedForGpunda("libinfo.find_lib_path is not supported: gpunda is pure "
                                  "Python and has no libmxnet")


def find_include_path():
    """Not supported: gpunda ships no C headers."""
    raise NotImplementedForGpunda("libinfo.find_include_path is not supported: gpunda "
                                  "is pure Python and ships no C headers")


def find_conf_path(prefix="tvmop"):
    """Not supported: gpunda has no TVM operator configuration."""
    raise NotImplementedForGpunda("libinfo.find_conf_path is not supported: gpunda has "
                                  "no TVM operators and so no TVM configuration")
