"""Vision data (MXNet's ``gluon.data.vision``): datasets read from local files and
image transforms. ``transforms`` loads on first use."""
from __future__ import annotations

from gpunda.gluon.data.vision.datasets import (MNIST, FashionMNIST, CIFAR10, CIFAR100, ImageRecordDataset,  # noqa: F401
                       ImageFolderDataset, ImageListDataset)
from gpunda.gluon.data.vision import datasets  # noqa: F401

__all__ = ["MNIST", "FashionMNIST", "CIFAR10", "CIFAR100", "ImageRecordDataset",
           "ImageFolderDataset", "ImageListDataset", "datasets", "transforms"]


def __getattr__(name):
    if name == "transforms":
        import importlib
        return importlib.import_module(f"{__name__}.transforms")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
