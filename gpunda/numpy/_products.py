"""``mx.np`` products: dot, matmul, tensordot, einsum, inner, outer, vdot, kron
(ops in ops/np_linalg.py, differentiable through einsum)."""
from __future__ import annotations

import numbers

from gpunda.numpy._helpers import to_tensor, tensors, invoke

__all__ = ["dot", "matmul", "tensordot", "einsum", "inner", "outer", "vdot", "kron"]


def dot(a, b, out=None):
    """NumPy's dot: the sum product over the last axis of ``a`` and the second-last of ``b``."""
    a, b = tensors([a, b])
    return invoke("_np_dot", [a, b], out=out)


def matmul(a, b, out=None):
    """Matrix product; leading axes broadcast as batches, 1-D operands as vectors."""
    a, b = tensors([a, b])
    return invoke("_npi_matmul", [a, b], out=out)


def tensordot(a, b, axes=2):
    """Sum of products over ``axes`` (an int: the last/first ``axes`` axes; or two lists)."""
    a, b = tensors([a, b])
    if isinstance(axes, numbers.Integral):
        if axes < 0:
            raise ValueError("tensordot: axes must be non-negative")
        return invoke("_npi_tensordot_int_axes", [a, b], axes=int(axes))
    aa, ba = axes
    aa = (aa,) if isinstance(aa, numbers.Integral) else tuple(aa)
    ba = (ba,) if isinstance(ba, numbers.Integral) else tuple(ba)
    if len(aa) != len(ba):
        raise ValueError("shape-mismatch for sum")
    return invoke("_npi_tensordot", [a, b], a_axes_summed=aa, b_axes_summed=ba)


def einsum(*operands, **kwargs):
    """Einstein summation: ``einsum('ij,jk->ik', a, b)``."""
    subscripts, arrays = operands[0], tensors(list(operands[1:]))
    optimize = kwargs.get("optimize", False)
    out = kwargs.get("out")
    return invoke("_npi_einsum", arrays, out=out, subscripts=subscripts, num_args=len(arrays),
                  optimize=int(bool(optimize)))


def inner(a, b):
    """Inner product over the last axes."""
    a, b = tensors([a, b])
    return invoke("_npi_tensordot", [a, b], a_axes_summed=(-1,), b_axes_summed=(-1,))


def outer(a, b):
    """Outer product of the flattened inputs."""
    from gpunda.numpy._manip import ravel
    a, b = tensors([a, b])
    return invoke("_npi_einsum", [ravel(a), ravel(b)], subscripts="i,j->ij", num_args=2)


def vdot(a, b):
    """Dot product of the flattened inputs."""
    from gpunda.numpy._manip import ravel
    a, b = tensors([a, b])
    return invoke("_npi_einsum", [ravel(a), ravel(b)], subscripts="i,i->", num_args=2)


def kron(a, b):
    """Kronecker product."""
    from gpunda.numpy._manip import reshape
    a, b = tensors([a, b])
    if a.ndim != b.ndim:
        raise ValueError("kron: only inputs with the same number of dimensions are supported")
    n = a.ndim
    la, lb = "abcdefgh"[:n], "ijklmnop"[:n]
    r = invoke("_npi_einsum", [a, b], subscripts=f"{la},{lb}->" + "".join(x + y for x, y in zip(la, lb)),
               num_args=2)
    return reshape(r, tuple(x * y for x, y in zip(a.shape, b.shape)))
