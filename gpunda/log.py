"""MXNet's ``mx.log``: loggers with glog-style lines (``I1201 09:30:00 123 file.py:fn:7] msg``)."""
from __future__ import annotations

import logging
import sys
import warnings

__all__ = ["getLogger", "get_logger", "CRITICAL", "ERROR", "WARNING", "INFO", "DEBUG", "NOTSET"]

CRITICAL = logging.CRITICAL
ERROR = logging.ERROR
WARNING = logging.WARNING
INFO = logging.INFO
DEBUG = logging.DEBUG
NOTSET = logging.NOTSET

_LABELS = {CRITICAL: "C", ERROR: "E", WARNING: "W", INFO: "I", DEBUG: "D"}
_COLORS = {CRITICAL: "\x1b[35m", ERROR: "\x1b[31m", WARNING: "\x1b[33m", INFO: "\x1b[32m",
           DEBUG: "\x1b[34m"}


class _Formatter(logging.Formatter):
    """Level letter, date, pid, file:function:line, then the message; colours on a tty."""

    def __init__(self, colored=True):
        self.colored = colored
        super().__init__(datefmt="%m%d %H:%M:%S")

    def format(self, record):
        color = self.colored and sys.stderr.isatty()
        fmt = _COLORS.get(record.levelno, "") if color else ""
        fmt += _LABELS.get(record.levelno, "U")
        fmt += "%(asctime)s %(process)d %(pathname)s:%(funcName)s:%(lineno)d"
        fmt += "]\x1b[0m" if color else "]"
        fmt += " %(message)s"
        self._style._fmt = fmt
        return super().format(record)


def get_logger(name=None, filename=None, filemode=None, level=WARNING):
    """A logger writing glog-style lines to stderr (or to ``filename``), set up once per name."""
    logger = logging.getLogger(name)
    if name is not None and not getattr(logger, "_init_done", None):
        logger._init_done = True
        if filename:
            handler = logging.FileHandler(filename, filemode or "a")
        else:
            handler = logging.StreamHandler()
        handler.setFormatter(_Formatter(colored=not filename))
        logger.addHandler(handler)
        logger.setLevel(level)
    return logger


def getLogger(name=None, filename=None, filemode=None, level=WARNING):
    """Deprecated spelling of ``get_logger``."""
    warnings.warn("getLogger is deprecated, Use get_logger instead.", DeprecationWarning,
                  stacklevel=2)
    return get_logger(name, filename, filemode, level)
