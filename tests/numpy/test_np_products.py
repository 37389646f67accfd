"""mx.np products (dot, matmul, tensordot, einsum, inner, outer, vdot, kron) against
official NumPy, and their einsum-based gradients against finite differences."""
import numpy as onp
import pytest

from gpunda import numpy as np
from _np_util import mxa, check_grad

rng = onp.random.RandomState(3)
A23, B34 = rng.uniform(0.5, 1.5, (2, 3)), rng.uniform(0.5, 1.5, (3, 4))
A234 = rng.uniform(0.5, 1.5, (2, 3, 4))
V3 = rng.uniform(0.5, 1.5, 3)

PAIRS = [("dot_2d", "dot", A23, B34, ()), ("dot_nd", "dot", A234, rng.uniform(size=(2, 4, 3)), ()),
         ("dot_vec", "dot", V3, B34, ()), ("dot_scalar", "dot", onp.array(2.0), A23, ()),
         ("matmul", "matmul", A234, rng.uniform(size=(4, 2)), ()),
         ("matmul_bcast", "matmul", rng.uniform(size=(2, 1, 2, 3)), rng.uniform(size=(4, 3, 2)), ()),
         ("matmul_vec", "matmul", V3, rng.uniform(size=(2, 3, 4)), ()),
         ("matmul_vec_r", "matmul", A23, V3, ()),
         ("tensordot", "tensordot", A234, rng.uniform(size=(4, 3, 2)), (([1, 2], [1, 0]),)),
         ("tensordot_int", "tensordot", A234, rng.uniform(size=(3, 4, 2)), (2,)),
         ("tensordot_0", "tensordot", A23, V3, (0,)),
         ("inner", "inner", A234, rng.uniform(size=(5, 4)), ()),
         ("outer", "outer", A23, V3, ()), ("vdot", "vdot", A23, A23 * 2, ()),
         ("kron", "kron", A23, rng.uniform(size=(2, 2)), ())]


@pytest.mark.parametrize("name,fn,a,b,extra", PAIRS, ids=[p[0] for p in PAIRS])
def test_matches_numpy(name, fn, a, b, extra):
    r = getattr(np, fn)(mxa(a), mxa(b), *extra)
    onp.testing.assert_allclose(r.asnumpy(), getattr(onp, fn)(a, b, *extra), rtol=1e-6)


@pytest.mark.parametrize("name,fn,a,b,extra", PAIRS, ids=[p[0] for p in PAIRS])
def test_gradients(name, fn, a, b, extra):
    check_grad(lambda x, y: getattr(np, fn)(x, y, *extra), a, b)


@pytest.mark.parametrize("subscripts,shapes", [
    ("ij,jk->ik", [(2, 3), (3, 4)]), ("ij->ji", [(2, 3)]), ("ii->i", [(3, 3)]),
    ("ijk,ikl->ijl", [(2, 3, 4), (2, 4, 2)]), ("i,i", [(3,), (3,)]), ("ij", [(2, 3)]),
    ("...ij,...jk->...ik", [(2, 2, 3), (3, 4)]), ("ij->", [(2, 3)]), ("i,j,k->ijk", [(2,), (3,), (2,)])])
def test_einsum(subscripts, shapes):
    ops = [rng.uniform(0.5, 1.5, s) for s in shapes]
    r = np.einsum(subscripts, *[mxa(o) for o in ops])
    onp.testing.assert_allclose(r.asnumpy(), onp.einsum(subscripts, *ops), rtol=1e-6)
    if subscripts != "ii->i":
        check_grad(lambda *xs: np.einsum(subscripts, *xs), *ops)


def test_mixed_dtypes_and_errors():
    assert np.dot(mxa(A23.astype(onp.float32)), mxa(B34.astype(onp.float64))).dtype == onp.float64
    with pytest.raises(Exception, match="not aligned"):
        np.dot(mxa(A23), mxa(A23))
    with pytest.raises(Exception, match="scalar"):
        np.matmul(mxa(onp.array(1.0)), mxa(A23))


def test_einsum_gradient_sums_broadcast_size1_axes():
    check_grad(lambda a, b: np.einsum("ij,ij->i", a, b), rng.uniform(size=(1, 4)),
               rng.uniform(size=(2, 4)))
