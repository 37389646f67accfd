"""Vision datasets (MXNet's ``gluon.data.vision``): gpunda ships no downloader.

``MNIST``/``CIFAR10`` need network downloads, which gpunda does not do; the
classes exist so imports work and raise a clear error when used.
"""
from __future__ import annotations

from ...base import GpundaError

__all__ = ["MNIST", "FashionMNIST", "CIFAR10", "CIFAR100"]


class _Unavailable:
    def __init__(self, *args, **kwargs):
        raise GpundaError(f"gluon.data.vision.{type(self).__name__}: downloading datasets is not "
                          f"supported by gpunda; load the arrays yourself and use ArrayDataset")


class MNIST(_Unavailable):
    """Not available offline (raises GpundaError)."""


class FashionMNIST(_Unavailable):
    """Not available offline (raises GpundaError)."""


class CIFAR10(_Unavailable):
    """Not available offline (raises GpundaError)."""


class CIFAR100(_Unavailable):
    """Not available offline (raises GpundaError)."""
