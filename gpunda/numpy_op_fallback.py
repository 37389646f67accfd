"""MXNet's ``mxnet.numpy_op_fallback``: NumPy functions run on the host as custom operators.

``register(op_name)`` registers a ``CustomOpProp`` under ``op_name`` (in NumPy-array mode) and
adds ``op_name`` to ``mx.nd.np._internal`` and ``mx.sym.np._internal`` as the ``Custom`` op of
that type. The module registers MXNet 1.9.1's four fallbacks when first imported:
``empty_like_fallback``, ``resize_fallback``, ``unravel_index_fallback`` and ``mvn_fallback``
(gpunda's ``mx.np`` computes those functions with its own ops; the fallbacks are there for code
that calls them by name). Their forward runs NumPy (or ``mx.np``) on the inputs; none has a
gradient.
"""
from __future__ import annotations

import ast
import functools

import numpy as np

from gpunda import operator
from gpunda.base import GpundaError, GpundaValueError
from gpunda.util import np_array, use_np

__all__ = ["register", "EmptyLike", "EmptyLikeProp", "Resize", "ResizeProp", "Unravel_index",
           "Unravel_indexProp", "MultivariateNormal", "MultivariateNormalProp"]


def _namespaces():
    """(mx.nd.np._internal, mx.sym.np._internal); the second reads the first's names and
    runs them building graph nodes."""
    from gpunda.numpy import _internal as nd_npi
    from gpunda.symbol import numpy as sym_np
    return nd_npi, sym_np._internal


def _add(mod, op_name, own_only, builtin=False):
    # the symbolic namespace reads the imperative one's names: ask it for its own only
    present = op_name in vars(mod) if own_only else hasattr(mod, op_name)
    if present:
        if builtin:     # gpunda has a native op of that name: it stays (same results, faster)
            return
        raise GpundaValueError(f"numpy_op_fallback.register: duplicate name {op_name!r} "
                               f"found in module {mod}")
    setattr(mod, op_name, functools.partial(mod.Custom, op_type=op_name))


def register(op_name, imperative=True, symbolic=True):
    """Class decorator: register a ``CustomOpProp`` subclass as custom op ``op_name`` (with
    NumPy-array semantics) and add ``op_name`` to ``mx.nd.np._internal`` (``imperative``)
    and ``mx.sym.np._internal`` (``symbolic``); a name already there raises ValueError."""
    return _registrar(op_name, imperative, symbolic, builtin=False)


def _registrar(op_name, imperative, symbolic, builtin):
    def _register_helper(prop_cls):
        with np_array():
            prop_cls = operator.register(op_name)(prop_cls)
        nd_npi, sym_npi = _namespaces()
        if imperative:
            _add(nd_npi, op_name, own_only=False, builtin=builtin)
        if symbolic:
            _add(sym_npi, op_name, own_only=True, builtin=builtin)
        return prop_cls
    return _register_helper


def _builtin(op_name):
    # this module's own fallbacks: where gpunda registers a native ``_npi_<op_name>`` op
    # (unravel_index_fallback, mvn_fallback), that op keeps the name
    return _registrar(op_name, True, True, builtin=True)


def _host(a):
    return a.asnumpy()


def _no_gradient(what):
    raise GpundaError(f"Operator {what} (numpy_op_fallback) does not support gradient "
                      f"computation")


@use_np
class EmptyLike(operator.CustomOp):
    """Forward of ``empty_like_fallback``: NumPy's ``empty_like`` of the prototype."""

    def __init__(self, dtype, order, subok, shape):
        super().__init__()
        self._dtype = dtype
        self._order = order
        self._subok = subok
        self._shape = shape

    def forward(self, is_train, req, in_data, out_data, aux):
        from gpunda import numpy as mnp
        out = np.empty_like(_host(in_data[0]), dtype=self._dtype, order=self._order,
                            subok=self._subok)
        self.assign(out_data[0], req[0], mnp.array(out, ctx=in_data[0].ctx))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        _no_gradient("empty_like")


@_builtin("empty_like_fallback")
class EmptyLikeProp(operator.CustomOpProp):
    """Properties of ``empty_like_fallback`` (input ``prototype``; parameters dtype, order,
    subok, shape as strings)."""

    def __init__(self, dtype, order, subok, shape):
        super().__init__(need_top_grad=True)
        self._dtype = None if dtype == "None" else dtype
        self._order = order
        self._subok = ast.literal_eval(subok)
        self._shape = ast.literal_eval(shape)

    def list_arguments(self):
        return ["prototype"]

    def infer_shape(self, in_shape):
        return (in_shape[0],), (in_shape[0],), ()

    def infer_type(self, in_type):
        if self._dtype is None:
            return (in_type[0],), (in_type[0],), ()
        from gpunda.numpy.utils import _STR_2_DTYPE_
        return (in_type[0],), (_STR_2_DTYPE_[self._dtype],), ()

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return EmptyLike(self._dtype, self._order, self._subok, self._shape)


@use_np
class Resize(operator.CustomOp):
    """Forward of ``resize_fallback``: NumPy's ``resize`` (repeats the data to fill)."""

    def __init__(self, new_shape):
        super().__init__()
        self._new_shape = new_shape

    def forward(self, is_train, req, in_data, out_data, aux):
        from gpunda import numpy as mnp
        out = np.resize(_host(in_data[0]), self._new_shape)
        self.assign(out_data[0], req[0], mnp.array(out, dtype=out.dtype, ctx=out_data[0].ctx))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        _no_gradient("resize")


@_builtin("resize_fallback")
class ResizeProp(operator.CustomOpProp):
    """Properties of ``resize_fallback`` (input ``a``; parameter new_shape)."""

    def __init__(self, new_shape):
        super().__init__(need_top_grad=True)
        self._new_shape = ast.literal_eval(new_shape)

    def list_arguments(self):
        return ["a"]

    def infer_shape(self, in_shape):
        shape = self._new_shape
        out_shape = (shape,) if np.isscalar(shape) else shape
        return (in_shape[0],), (out_shape,), ()

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return Resize(self._new_shape)


@use_np
class Unravel_index(operator.CustomOp):  # noqa: N801 -- MXNet's name
    """Forward of ``unravel_index_fallback``: NumPy's ``unravel_index``, stacked."""

    def __init__(self, shape):
        super().__init__()
        self._shape = shape

    def forward(self, is_train, req, in_data, out_data, aux):
        from gpunda import numpy as mnp
        out = np.unravel_index(_host(in_data[0]), self._shape)
        self.assign(out_data[0], req[0], mnp.array(out, dtype=out[0].dtype,
                                                   ctx=out_data[0].ctx))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        _no_gradient("Unravel_index")


@_builtin("unravel_index_fallback")
class Unravel_indexProp(operator.CustomOpProp):  # noqa: N801 -- MXNet's name
    """Properties of ``unravel_index_fallback`` (input ``indices``; parameter shape)."""

    def __init__(self, shape):
        super().__init__(need_top_grad=True)
        self._shape = ast.literal_eval(shape)

    def list_arguments(self):
        return ["indices"]

    def infer_shape(self, in_shape):
        lead = (1,) if np.isscalar(self._shape) else (len(self._shape),)
        return (in_shape[0],), (lead + tuple(in_shape[0]),), ()

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return Unravel_index(self._shape)


@use_np
class MultivariateNormal(operator.CustomOp):
    """Forward of ``mvn_fallback``: ``mean + L @ z`` with ``L`` the Cholesky factor of
    ``cov`` and ``z`` standard normal draws (``mx.np.random``): draws of covariance ``cov``."""

    def __init__(self, size=None):
        super().__init__()
        self._size = size

    def forward(self, is_train, req, in_data, out_data, aux):
        from gpunda import numpy as mnp
        loc, cov = in_data[0], in_data[1]
        if cov.dtype == np.float16:      # no float16 Cholesky: factor in float32
            scale = mnp.linalg.cholesky(cov.astype(np.float32)).astype(np.float16)
        else:
            scale = mnp.linalg.cholesky(cov)
        noise = mnp.random.normal(size=out_data[0].shape, dtype=loc.dtype, ctx=loc.ctx)
        # L @ z has covariance L L^T = cov; MXNet's einsum contracts the other index of L
        # and draws with covariance L^T L instead (docs/compat.md)
        self.assign(out_data[0], req[0], loc + mnp.einsum("...kj,...j->...k", scale, noise))

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        _no_gradient("random.multivariate_normal")


@_builtin("mvn_fallback")
class MultivariateNormalProp(operator.CustomOpProp):
    """Properties of ``mvn_fallback`` (inputs ``mean``, ``cov``; parameter size)."""

    def __init__(self, size=None):
        super().__init__(need_top_grad=True)
        self._size = ast.literal_eval(size) if size is not None else None

    def list_arguments(self):
        return ["mean", "cov"]

    def infer_shape(self, in_shape):
        loc_shape, cov_shape = in_shape[0], in_shape[1]
        if len(loc_shape) < 1:
            raise GpundaValueError("mvn_fallback: mean must be at least 1 dimensional")
        if len(cov_shape) < 2:
            raise GpundaValueError("mvn_fallback: cov must be at least 2 dimensional")
        if cov_shape[-1] != cov_shape[-2]:
            raise GpundaValueError(f"mvn_fallback: the last two dimensions of cov have to be "
                                   f"the same, whereas the shape of cov is {tuple(cov_shape)}")
        if cov_shape[-1] != loc_shape[-1]:
            raise GpundaValueError(f"mvn_fallback: mean and cov must have the same length; the "
                                   f"shape of mean is {tuple(loc_shape[-1:])} but the shape "
                                   f"of cov is {tuple(cov_shape[-2:])}")
        out_shape = np.broadcast_shapes(tuple(loc_shape), tuple(cov_shape[:-1]))
        if self._size is not None:
            size = (self._size,) if np.isscalar(self._size) else tuple(self._size)
            out_shape = size + out_shape
        return in_shape, (out_shape,), ()

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return MultivariateNormal(self._size)
