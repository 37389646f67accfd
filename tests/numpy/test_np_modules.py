"""mx.np's small submodules and the op-signature registry (numpy_op_signature)."""
import inspect
import io as _io

import numpy as onp
import pytest

import gpunda as mx
from gpunda import numpy as np


def test_genfromtxt_gives_ndarrays_on_the_context():
    r = np.io.genfromtxt(_io.StringIO("1,2\n3,4"), delimiter=",", ctx=mx.cpu(0))
    assert isinstance(r, np.ndarray) and r.dtype == onp.float64
    onp.testing.assert_array_equal(r.asnumpy(), [[1, 2], [3, 4]])


def test_set_printoptions_takes_only_precision_and_threshold():
    old = onp.get_printoptions()
    try:
        np.set_printoptions(precision=3)
        assert onp.get_printoptions()["precision"] == 3
        with pytest.raises(NotImplementedError):
            np.set_printoptions(linewidth=10)
    finally:
        onp.set_printoptions(**old)


def test_submodules_reexport():
    assert np.stride_tricks.broadcast_arrays is np.broadcast_arrays
    assert np.function_base.meshgrid is np.meshgrid
    assert np.utils._STR_2_DTYPE_["int32"] is onp.int32


def test_every_np_op_has_a_function_with_its_signature():
    from gpunda import numpy_op_signature, _numpy_op_doc
    from gpunda.operator import get_all_registered_operators
    names = [n for n in get_all_registered_operators() if n.startswith("_np_")]
    assert "_np_sum" in names
    for name in names:
        stub = getattr(_numpy_op_doc, name)
        fn = numpy_op_signature._get_builtin_op(name)
        saved = fn.__dict__.pop("__signature__", None)   # the function's own parameters
        try:
            assert str(inspect.signature(fn)) == str(inspect.signature(stub)), name
        finally:
            if saved is not None:
                fn.__signature__ = saved
    assert numpy_op_signature._get_builtin_op("_npi_add") is None
    with pytest.raises(ValueError):
        numpy_op_signature._get_builtin_op("_np_no_such_function")


def test_nd_and_sym_expose_np_and_npx_to_attribute_probes():
    # hasattr(mx.sym, 'numpy') once recursed without end (api_coverage.py's probe)
    import gpunda as mx
    for ns in (mx.nd, mx.sym):
        assert hasattr(ns, "numpy") and hasattr(ns, "np") and hasattr(ns, "npx")
    assert mx.sym.np is mx.sym.numpy


def test_import_warns_nothing_on_the_installed_numpy():
    # NumPy 1.25/1.26 warn (DeprecationWarning) on names they removed (np.mirr, ...) that
    # mx.np's fallbacks look up; CI runs this on NumPy 1.26 as well as 2.x
    import subprocess
    import sys
    code = ("import gpunda as mx; import gpunda.numpy, gpunda.numpy_extension; "
            "x = mx.nd.ones((2,)); y = x.astype(mx.nd.ones((1,), dtype='int32')); "
            "import numpy; assert numpy.dtype(y.dtype) == numpy.int32")
    r = subprocess.run([sys.executable, "-W", "error::DeprecationWarning", "-c", code],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
