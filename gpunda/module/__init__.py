"""``mx.mod`` / ``mx.module``: MXNet's symbolic training stack (one package, two names).

``Module`` binds a Symbol to data shapes on one or more contexts and trains it;
``BucketingModule`` keeps one Module per bucket key sharing parameters;
``SequentialModule`` chains modules; ``PythonModule``/``PythonLossModule`` are
modules written in Python. The loops (``fit``, ``score``, ``predict``) are in
``BaseModule``.
"""
from __future__ import annotations

from gpunda.module.base_module import BaseModule
from gpunda.module.module import Module
from gpunda.module.bucketing_module import BucketingModule
from gpunda.module.sequential_module import SequentialModule
from gpunda.module.python_module import PythonModule, PythonLossModule
from gpunda.module import executor_group  # noqa: F401  (MXNet's submodule, an attribute too)

__all__ = ["BaseModule", "Module", "BucketingModule", "SequentialModule", "PythonModule",
           "PythonLossModule"]
