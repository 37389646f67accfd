"""``mx.np.arrayprint``: printing options (``mx.np.ndarray`` prints through NumPy)."""
from __future__ import annotations

import numpy as _onp

__all__ = ["set_printoptions"]


def set_printoptions(precision=None, threshold=None, **kwarg):
    """Set NumPy's print ``precision`` and summarising ``threshold`` (the only options
    MXNet supports; others raise NotImplementedError)."""
    if kwarg:
        raise NotImplementedError("mxnet.numpy.set_printoptions only supports parameters "
                                  "precision and threshold for now.")
    _onp.set_printoptions(precision=precision, threshold=threshold)
