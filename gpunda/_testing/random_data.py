"""Random test data: shapes, NumPy arrays, dense and sparse NDArrays, special matrices.

All randomness comes from ``numpy.random``'s global state, so ``np.random.seed``
(and MXNet's ``with_seed`` decorators) make it reproducible.
"""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError
from gpunda._testing.environ import default_context, default_dtype

__all__ = ["random_arrays", "random_uniform_arrays", "random_sample", "rand_shape_2d",
           "rand_shape_3d", "rand_shape_nd", "rand_coord_2d", "shuffle_csr_column_indices",
           "rand_sparse_ndarray", "rand_ndarray", "create_sparse_array", "create_sparse_array_zd",
           "assign_each", "assign_each2", "create_2d_tensor", "create_vector",
           "get_identity_mat", "get_identity_mat_batch", "np_reduce", "collapse_sum_like",
           "new_matrix_with_real_eigvals_2d", "new_matrix_with_real_eigvals_nd",
           "new_orthonormal_matrix_2d", "new_sym_matrix_with_real_eigvals_2d",
           "new_sym_matrix_with_real_eigvals_nd"]

_STYPES = ("default", "csr", "row_sparse")


def _shape(shape):
    return (int(shape),) if np.ndim(shape) == 0 else tuple(int(s) for s in shape)


def random_arrays(*shapes):
    """Standard-normal float32 NumPy arrays, one per shape; one shape gives one array."""
    arrays = [np.array(np.random.randn(), dtype=default_dtype()) if len(_shape(s)) == 0
              else np.random.randn(*_shape(s)).astype(default_dtype()) for s in shapes]
    return arrays[0] if len(arrays) == 1 else arrays


def random_uniform_arrays(*shapes, low=0.0, high=1.0, dtype=None):
    """Uniform [low, high) NumPy arrays, one per shape (always a list)."""
    dtype = default_dtype() if dtype is None else dtype
    return [np.random.uniform(low, high, size=s).astype(dtype) for s in shapes]


def random_sample(population, k):
    """``k`` distinct items of ``population`` in random order."""
    population = list(population)
    if not 0 <= k <= len(population):
        raise GpundaError(f"random_sample: k={k} must be between 0 and {len(population)}")
    np.random.shuffle(population)
    return population[:k]


def rand_shape_2d(dim0=10, dim1=10, allow_zero_size=False):
    """A random 2-d shape with sides in [1, dim] (or [0, dim] with ``allow_zero_size``)."""
    low = 0 if allow_zero_size else 1
    return int(np.random.randint(low, dim0 + 1)), int(np.random.randint(low, dim1 + 1))


def rand_shape_3d(dim0=10, dim1=10, dim2=10, allow_zero_size=False):
    """A random 3-d shape with sides in [1, dim] (or [0, dim] with ``allow_zero_size``)."""
    low = 0 if allow_zero_size else 1
    return tuple(int(np.random.randint(low, d + 1)) for d in (dim0, dim1, dim2))


def rand_shape_nd(num_dim, dim=10, allow_zero_size=False):
    """A random shape of ``num_dim`` sides, each in [1, dim] (or [0, dim])."""
    low = 0 if allow_zero_size else 1
    return tuple(int(v) for v in np.random.randint(low, dim + 1, size=num_dim))


def rand_coord_2d(x_low, x_high, y_low, y_high):
    """A random integer point with x in [x_low, x_high) and y in [y_low, y_high)."""
    return (np.random.randint(x_low, x_high, dtype=np.int64),
            np.random.randint(y_low, y_high, dtype=np.int64))


def shuffle_csr_column_indices(csr):
    """Shuffle the column indices within each row of a SciPy csr matrix, in place, as
    MXNet's does: only ``indices`` move (the values stay), so the matrix changes and its
    rows' columns are left out of order, which MXNet's csr ops must accept.

    One ``np.random.shuffle`` per row, in row order, so a seed gives MXNet's indices.
    """
    for r in range(len(csr.indptr) - 1):
        lo, hi = csr.indptr[r], csr.indptr[r + 1]
        row = np.array(csr.indices[lo:hi])
        np.random.shuffle(row)
        csr.indices[lo:hi] = row


def _check_csr_request(shape, density, distribution):
    rows, cols = shape
    if density < 0 or density > 1:
        raise ValueError("density has to be between 0 and 1")
    if rows <= 0 or cols <= 0:
        raise ValueError("num_rows or num_cols should be greater than 0")
    if distribution == "powerlaw" and int(rows * cols * density) < 2 * rows:
        raise ValueError(f"not supported for this density: {density} for this shape "
                         f"({rows}, {cols}); powerlaw needs num_rows * num_cols * density >= "
                         f"2 * num_rows")


def _uniform_csr(shape, density, dtype, data_init, shuffle):
    """A SciPy csr with ``int(rows * cols * density)`` non-zeros at distinct random places."""
    import scipy.sparse
    csr = scipy.sparse.random(shape[0], shape[1], density=density, format="csr",
                              dtype=np.float64, random_state=np.random.randint(2 ** 31))
    csr.data = csr.data.astype(dtype)
    if data_init is not None:
        csr.data.fill(data_init)
    if shuffle:     # a CSRNDArray keeps (and computes with) rows of unsorted columns
        shuffle_csr_column_indices(csr)
    return csr


def _powerlaw_dense(shape, density, dtype):
    """Rows with about twice as many non-zeros as the row before (NumPy, dense).

    Every row first gets one value in column 0; then row i fills columns up to
    2**(i+1), whole rows once the width is reached, until ``rows * cols *
    density`` values are placed.
    """
    rows, cols = shape
    left = int(rows * cols * density)
    out = np.zeros(shape, dtype=dtype)

    def value():
        return 1 + np.random.uniform(0.001, 2)
    for r in range(rows):
        out[r, 0] = value()
        left -= 1
        if left <= 0:
            return out
    width = 2
    for r in range(rows):
        limit = min(cols, width)
        if limit == cols and left > limit:
            out[r, :] = value()
            left -= limit - 1
            if left <= 0:
                return out
            continue
        for c in range(1, limit):
            out[r, c] = value()
            left -= 1
            if left <= 0:
                return out
        width *= 2
    if left > 0:
        raise ValueError(f"not supported for this density: {density} for this shape "
                         f"({rows},{cols})")
    return out


def _validate_csr_generation_inputs(num_rows, num_cols, density, distribution="uniform"):
    """A ValueError unless a ``num_rows x num_cols`` csr of ``density`` can be generated
    with ``distribution`` ('uniform' or 'powerlaw', which needs 2 non-zeros a row)."""
    _check_csr_request((num_rows, num_cols), density, distribution)


def _get_uniform_dataset_csr(num_rows, num_cols, density=0.1, dtype=None, data_init=None,
                             shuffle_csr_indices=False):
    """A CSRNDArray with ``int(num_rows * num_cols * density)`` non-zeros at distinct
    uniformly random places, values uniform in [0, 1) (all ``data_init`` when given);
    ``dtype`` None is SciPy's float64, as in MXNet."""
    from gpunda.ndarray import sparse
    _validate_csr_generation_inputs(num_rows, num_cols, density, distribution="uniform")
    dtype = np.float64 if dtype is None else dtype
    csr = _uniform_csr((num_rows, num_cols), density, dtype, data_init, shuffle_csr_indices)
    return sparse.csr_matrix((csr.data, csr.indices, csr.indptr), shape=(num_rows, num_cols),
                             dtype=dtype)


def _get_powerlaw_dataset_csr(num_rows, num_cols, density=0.1, dtype=None):
    """A float32 CSRNDArray whose rows have about twice the non-zeros of the row before
    (``_powerlaw_dense``, built in ``dtype``); a ValueError where that cannot place
    ``num_rows * num_cols * density`` values."""
    from gpunda.ndarray.ndarray import array
    _validate_csr_generation_inputs(num_rows, num_cols, density, distribution="powerlaw")
    dense = _powerlaw_dense((num_rows, num_cols), density, dtype)
    return array(dense, dtype=np.float32).tostype("csr")


def rand_sparse_ndarray(shape, stype, density=None, dtype=None, distribution=None,
                        data_init=None, rsp_indices=None, modifier_func=None,
                        shuffle_csr_indices=False, ctx=None):
    """A random sparse NDArray and its parts.

    Args:
        shape: the array's shape (2-d for csr).
        stype: 'csr' or 'row_sparse'.
        density: fraction of non-zeros (of rows, for row_sparse); random if None.
        dtype: default float32.
        distribution: 'uniform' (default) or, for csr, 'powerlaw' (row i has about
            twice the non-zeros of row i-1).
        data_init: a value every stored element gets instead of a random one.
        rsp_indices: the stored rows of a row_sparse array (instead of random ones).
        modifier_func: applied to every stored value.
        shuffle_csr_indices: leave csr column indices unsorted within rows.

    Returns:
        ``(arr, (values, indices))`` for row_sparse, as NumPy arrays;
        ``(arr, (indptr, indices, data))`` for csr, as NDArrays. Stored values
        are uniform in [0, 1) (powerlaw: in [1.001, 3)).
    """
    from gpunda.ndarray import sparse
    from gpunda.ndarray.ndarray import zeros
    ctx = ctx if ctx else default_context()
    density = np.random.rand() if density is None else density
    dtype = default_dtype() if dtype is None else dtype
    distribution = "uniform" if distribution is None else distribution
    shape = _shape(shape)
    if stype == "row_sparse":
        if distribution != "uniform":
            raise GpundaError(f"rand_sparse_ndarray: distribution={distribution!r} is not "
                              f"supported for row_sparse; use 'uniform'")
        if rsp_indices is not None:
            indices = np.asarray(rsp_indices)
            if len(indices) > shape[0]:
                raise GpundaError(f"rand_sparse_ndarray: {len(indices)} rsp_indices for "
                                  f"{shape[0]} rows")
        else:
            indices = np.flatnonzero(np.random.rand(shape[0]) < density)
        if indices.shape[0] == 0:
            arr = zeros(shape, stype="row_sparse", dtype=dtype, ctx=ctx)
            return arr, (np.array([], dtype=dtype), np.array([]))
        values = np.random.rand(indices.shape[0], *shape[1:]).astype(dtype)
        if data_init is not None:
            values.fill(data_init)
        if modifier_func is not None:
            values = assign_each(values, modifier_func)
        arr = sparse.row_sparse_array((values, indices), shape=shape, dtype=dtype, ctx=ctx)
        return arr, (values, indices)
    if stype == "csr":
        if len(shape) != 2:
            raise GpundaError(f"rand_sparse_ndarray: a csr array must be 2-d, got shape {shape}")
        if distribution not in ("uniform", "powerlaw"):
            raise GpundaError(f"rand_sparse_ndarray: distribution={distribution!r} is not one "
                              f"of 'uniform', 'powerlaw'")
        _check_csr_request(shape, density, distribution)
        if distribution == "uniform":
            csr = _uniform_csr(shape, density, dtype, data_init, shuffle_csr_indices)
        else:
            import scipy.sparse
            csr = scipy.sparse.csr_matrix(_powerlaw_dense(shape, density, dtype))
        if modifier_func is not None:
            csr.data = assign_each(csr.data, modifier_func).astype(dtype)
        arr = sparse.csr_matrix((csr.data, csr.indices, csr.indptr), shape=shape, dtype=dtype,
                                ctx=ctx)
        return arr, (arr.indptr, arr.indices, arr.data)
    raise GpundaError(f"rand_sparse_ndarray: stype={stype!r} is not one of 'csr', 'row_sparse'")


def rand_ndarray(shape, stype="default", density=None, dtype=None, modifier_func=None,
                 shuffle_csr_indices=False, distribution=None, ctx=None):
    """A random NDArray: standard normal values for 'default', ``rand_sparse_ndarray`` otherwise.

    ``modifier_func`` is applied to every (stored) value.
    """
    from gpunda.ndarray.ndarray import array
    ctx = ctx if ctx else default_context()
    if stype not in _STYPES:
        raise GpundaError(f"rand_ndarray: stype={stype!r} is not one of {list(_STYPES)}")
    if stype == "default":
        vals = random_arrays(_shape(shape))
        if modifier_func is not None:
            vals = assign_each(vals, modifier_func)
        return array(vals, dtype=default_dtype() if dtype is None else dtype, ctx=ctx)
    arr, _ = rand_sparse_ndarray(shape, stype, density=density, modifier_func=modifier_func,
                                 dtype=dtype, shuffle_csr_indices=shuffle_csr_indices,
                                 distribution=distribution, ctx=ctx)
    return arr


def create_sparse_array(shape, stype, data_init=None, rsp_indices=None, dtype=None,
                        modifier_func=None, density=.5, shuffle_csr_indices=False):
    """A random sparse NDArray (``rand_sparse_ndarray``); row_sparse indices are sorted first."""
    if stype == "row_sparse":
        indices = None if rsp_indices is None else np.sort(np.asarray(rsp_indices))
        arr, _ = rand_sparse_ndarray(shape, stype, density=density, data_init=data_init,
                                     rsp_indices=indices, dtype=dtype,
                                     modifier_func=modifier_func)
    elif stype == "csr":
        arr, _ = rand_sparse_ndarray(shape, stype, density=density, data_init=data_init,
                                     dtype=dtype, modifier_func=modifier_func,
                                     shuffle_csr_indices=shuffle_csr_indices)
    else:
        raise GpundaError(f"create_sparse_array: unknown storage type {stype!r}; use 'csr' or "
                          f"'row_sparse'")
    return arr


def create_sparse_array_zd(shape, stype, density, data_init=None, rsp_indices=None,
                           dtype=None, modifier_func=None, shuffle_csr_indices=False):
    """``create_sparse_array``; a row_sparse array stores exactly ``rsp_indices`` (or no row)."""
    if stype == "row_sparse":
        density = 0.0
        if rsp_indices is not None and len(rsp_indices) > _shape(shape)[0]:
            raise GpundaError(f"create_sparse_array_zd: {len(rsp_indices)} rsp_indices for "
                              f"{_shape(shape)[0]} rows")
    return create_sparse_array(shape, stype, data_init=data_init, rsp_indices=rsp_indices,
                               dtype=dtype, modifier_func=modifier_func, density=density,
                               shuffle_csr_indices=shuffle_csr_indices)


def assign_each(the_input, function):
    """``function`` of every element of ``the_input``, as float64 (a copy when None)."""
    the_input = np.asarray(the_input)
    if function is None:
        return np.array(the_input)
    out = np.fromiter((function(v) for v in the_input.flat), dtype=np.float64,
                      count=the_input.size)
    return out.reshape(the_input.shape)


def assign_each2(input1, input2, function):
    """``function(a, b)`` of every pair of elements, as float64 (a copy of input1 when None)."""
    input1 = np.asarray(input1)
    if function is None:
        return np.array(input1)
    input2 = np.asarray(input2)
    if input1.shape != input2.shape:
        raise GpundaError(f"assign_each2: shapes {input1.shape} and {input2.shape} differ")
    out = np.fromiter((function(a, b) for a, b in zip(input1.flat, input2.flat)),
                      dtype=np.float64, count=input1.size)
    return out.reshape(input1.shape)


def create_2d_tensor(rows, columns, dtype=np.int64):
    """An NDArray of shape (rows, columns) whose row i holds i everywhere."""
    from gpunda.ndarray.ndarray import arange
    from gpunda import ndarray as nd
    return nd.broadcast_to(arange(0, rows, dtype=dtype).reshape(rows, 1), shape=(rows, columns))


def create_vector(size, dtype=np.int64):
    """``arange(size)`` as an NDArray."""
    from gpunda.ndarray.ndarray import arange
    return arange(0, size, dtype=dtype)


def get_identity_mat(size):
    """The float32 identity matrix of side ``size`` as an NDArray."""
    from gpunda.ndarray.ndarray import array
    return array(np.eye(size, dtype=np.float32))


def get_identity_mat_batch(size):
    """Two identity matrices, shape (2, size, size)."""
    from gpunda.ndarray.ndarray import array
    eye = np.eye(size, dtype=np.float32)
    return array(np.stack([eye, eye]))


def np_reduce(dat, axis, keepdims, numpy_reduce_func):
    """Reduce NumPy ``dat`` over ``axis`` (None, int or sequence) one axis at a time."""
    if isinstance(axis, int):
        axis = [axis]
    else:
        axis = list(axis) if axis is not None else list(range(len(dat.shape)))
    ret = dat
    for i in sorted(axis, reverse=True):
        ret = numpy_reduce_func(ret, axis=i)
    if keepdims:
        keep = list(dat.shape)
        for i in axis:
            keep[i] = 1
        ret = ret.reshape(tuple(keep))
    return ret


def collapse_sum_like(a, shape):
    """Sum NumPy ``a`` down to ``shape`` (which broadcasts to ``a.shape``): a broadcast's gradient."""
    shape = tuple(shape)
    if len(a.shape) < len(shape):
        raise GpundaError(f"collapse_sum_like: shape {shape} has more axes than {a.shape}")
    if int(np.prod(shape)) == 0 or a.size == 0:
        return np.zeros(shape, dtype=a.dtype)
    lead = len(a.shape) - len(shape)
    axes = list(range(lead))
    for i, s in enumerate(shape):
        if s != a.shape[lead + i]:
            if s != 1:
                raise GpundaError(f"collapse_sum_like: shape {shape} does not broadcast to "
                                  f"{a.shape}")
            axes.append(lead + i)
    return np.sum(a, axis=tuple(axes)).reshape(shape)


def new_matrix_with_real_eigvals_2d(n):
    """A random n x n matrix with real eigenvalues in [-10, 10], similar to a diagonal one
    through a well-conditioned (cond < 3) basis."""
    while True:
        v = np.random.uniform(-1.0, 1.0, (n, 1))
        v /= np.linalg.norm(v)
        reflect = np.eye(n) - 2 * v @ v.T
        basis = reflect @ np.diag(np.random.uniform(-1.0, 1.0, n))
        if np.linalg.cond(basis, 2) < 3:
            break
    eig = np.diag(np.random.uniform(-10.0, 10.0, n))
    return np.linalg.inv(basis) @ eig @ basis


def new_matrix_with_real_eigvals_nd(shape):
    """A batch (``shape[:-2]``) of ``new_matrix_with_real_eigvals_2d`` matrices."""
    count = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    return np.array([new_matrix_with_real_eigvals_2d(shape[-1])
                     for _ in range(count)]).reshape(shape)


def new_orthonormal_matrix_2d(n):
    """A random n x n orthonormal matrix."""
    x = np.random.randn(n, n)
    return np.linalg.qr(x.T @ x)[0]


def new_sym_matrix_with_real_eigvals_2d(n):
    """A random symmetric n x n matrix with eigenvalues in [-10, 10]."""
    q = new_orthonormal_matrix_2d(n)
    return q.T @ np.diag(np.random.uniform(-10.0, 10.0, n)) @ q


def new_sym_matrix_with_real_eigvals_nd(shape):
    """A batch (``shape[:-2]``) of ``new_sym_matrix_with_real_eigvals_2d`` matrices."""
    count = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    return np.array([new_sym_matrix_with_real_eigvals_2d(shape[-1])
                     for _ in range(count)]).reshape(shape)
