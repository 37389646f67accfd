"""Testing helpers with the names, signatures, defaults and tolerances of ``mxnet.test_utils``.

- comparison with per-dtype tolerances: ``assert_almost_equal`` (and
  ``_with_err``, ``_ignore_nan``), ``almost_equal``, ``same``, ``get_tols``;
- random data: ``rand_ndarray``, ``rand_sparse_ndarray``, ``rand_shape_*``,
  ``random_arrays``, ``create_sparse_array``, special matrices;
- gradient and graph checks: ``check_numeric_gradient``,
  ``check_symbolic_forward/backward``, ``check_consistency``, ``check_speed``,
  ``check_gluon_hybridize_consistency``, ``compare_optimizer``;
- random-generator statistics: ``verify_generator``, ``chi_square_check``, ...;
- where tests run: ``default_context``, ``environment``, ``retry``, ...;
- data: ``download`` and the MNIST/CIFAR-10 helpers, ``DummyIter``.

The code lives in ``gpunda/_testing/``; this module only names it.
"""
from __future__ import annotations

import sys

from gpunda.context import Context, current_context  # noqa: F401
from gpunda.ndarray import array  # noqa: F401  (MXNet's test_utils exports it)
from gpunda.runtime import Features  # noqa: F401
from gpunda.symbol import Symbol  # noqa: F401
from gpunda.util import getenv, setenv, use_np  # noqa: F401

from gpunda._testing.compare import *  # noqa: F401,F403
from gpunda._testing.compare import __all__ as _compare_all
from gpunda._testing.datasets import *  # noqa: F401,F403
from gpunda._testing.datasets import __all__ as _datasets_all
from gpunda._testing.environ import *  # noqa: F401,F403
from gpunda._testing.environ import __all__ as _environ_all
from gpunda._testing.gradients import *  # noqa: F401,F403
from gpunda._testing.gradients import __all__ as _gradients_all
from gpunda._testing.random_data import *  # noqa: F401,F403
from gpunda._testing.random_data import __all__ as _random_all
from gpunda._testing.runners import *  # noqa: F401,F403
from gpunda._testing.runners import __all__ as _runners_all
from gpunda._testing.stats import *  # noqa: F401,F403
from gpunda._testing.stats import __all__ as _stats_all

# MXNet's private helpers of this module (tests call some of them)
from gpunda._testing.compare import _find_max_violation  # noqa: E402,F401
from gpunda._testing.gradients import (_parse_aux_states, _parse_location,  # noqa: E402,F401
                                       _sorted_dict, _sorted_items)
from gpunda._testing.random_data import (_get_powerlaw_dataset_csr,  # noqa: E402,F401
                                         _get_uniform_dataset_csr,
                                         _validate_csr_generation_inputs)



def __getattr__(name):
    # ``_features``: the features of this build, as MXNet's module keeps them; made on first
    # use, since probing for a GPU (and NCCL) at import would slow every test module down
    if name == "_features":
        value = globals()["_features"] = Features()
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: the gpunda package, as ``mx`` is in MXNet's module
mx = sys.modules[__name__.rpartition(".")[0]]


#: MXNet's name here for the ``mx.sym.np`` Symbol class (``isinstance`` tests use it)
from gpunda.symbol.numpy import _Symbol as np_symbol  # noqa: E402


__all__ = (_compare_all + _datasets_all + _environ_all + _gradients_all + _random_all
           + _runners_all + _stats_all
           + ["array", "Context", "current_context", "Features", "Symbol", "getenv", "setenv",
              "use_np", "mx", "np_symbol"])
