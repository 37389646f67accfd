"""gpunda's helper names do not leak into the namespaces MXNet users list with dir().

Recorded from real MXNet 1.9.1 (/work/mxref): none of the names below is in
``dir(m)`` for its module ``m``::

    for m in (mx, mx.sym, mx.init, mx.autograd, mx.metric, mx.contrib, mx.np, mx.np.random,
              mx.npx, mx.image, mx.nd):
        'annotations' in dir(m)            -> False for every one
    {'GpundaError', 'math'} & set(dir(mx.init))                 -> set()
    {'OpDef', 'GpundaError'} & set(dir(mx.autograd))            -> set()
    {'numbers', 'invoke', 'is_tensor', 'to_tensor', 'context_of',
     'current_context'} & set(dir(mx.np.random))               -> set()
    {'absent_module_getattr', 'resolve_dtype', 'default_float'} & set(dir(mx.np)) -> set()
    'absent_module_getattr' in dir(mx.npx), 'optional_module_getattr' in dir(mx.image) -> False
"""
import subprocess
import sys

import pytest

import gpunda as mx

_LEAKS = {
    "": {"annotations"},
    "sym": {"annotations"},
    "nd": {"annotations"},
    "init": {"annotations", "GpundaError", "math"},
    "autograd": {"annotations", "OpDef", "GpundaError"},
    "metric": {"annotations"},
    "contrib": {"annotations"},
    "np": {"absent_module_getattr", "resolve_dtype", "default_float", "annotations"},
    "np.random": {"annotations", "numbers", "invoke", "is_tensor", "to_tensor", "context_of",
                  "current_context"},
    "npx": {"absent_module_getattr", "annotations"},
    "image": {"optional_module_getattr", "annotations"},
}


@pytest.mark.parametrize("path", sorted(_LEAKS))
def test_no_helper_names(path):
    m = mx
    for part in filter(None, path.split(".")):
        m = getattr(m, part)
    assert not (_LEAKS[path] & set(dir(m)))


def test_modules_still_work():
    # the renamed helpers are still reached by the functions that use them
    mx.random.seed(1)
    assert mx.np.random.uniform(size=(2, 3)).shape == (2, 3)
    assert mx.np.random.randint(0, 5, size=(4,)).shape == (4,)
    assert mx.np.random.choice(5, size=3).shape == (3,)
    assert mx.np.zeros((2,), dtype=None).dtype == mx.np.float32
    with pytest.raises(mx.base.MXNetError, match="Xavier"):
        mx.init.Xavier(rnd_type="bad")
    p = mx.gluon.Parameter("w", shape=(4, 3))
    p.initialize(mx.init.Xavier())
    assert abs(p.data().asnumpy()).max() <= (3.0 / 3.5) ** 0.5 + 1e-6
    with pytest.raises(AttributeError):
        mx.np.not_a_function
    with pytest.raises(AttributeError):
        mx.npx.not_a_function


# Recorded from MXNet 1.9.1: these names are in dir(mx) / dir(mx.nd) / dir(mx.sym);
# gpunda loads them on first use and lists them all the same.
_LISTED = {
    "": {"np", "npx", "mod", "module", "callback", "monitor", "mon", "img", "image", "rnn",
         "contrib", "operator", "profiler", "test_utils", "visualization", "viz", "notebook",
         "numpy", "numpy_extension", "np_symbol", "library", "log", "registry"},
    "nd": {"CachedOp", "np", "npx", "numpy", "numpy_extension"},
    "sym": {"np", "npx", "numpy", "numpy_extension", "register"},
}


@pytest.mark.parametrize("path", sorted(_LISTED))
def test_lazy_names_listed(path):
    m = mx
    for part in filter(None, path.split(".")):
        m = getattr(m, part)
    assert _LISTED[path] <= set(dir(m))
    for name in _LISTED[path]:
        assert getattr(m, name) is not None



def test_import_gpunda_does_not_list_unloaded_modules():
    # in a fresh interpreter: other tests import mx.space or mx.cython, which then are
    # attributes of the package, as they are of MXNet's after such an import
    code = "import gpunda; print(sorted({'cython', 'misc', 'space'} & set(dir(gpunda))))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True).stdout
    assert out.strip() == "[]"
