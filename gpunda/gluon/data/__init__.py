"""Gluon data: datasets, samplers and the DataLoader (MXNet 1.x ``gluon.data``)."""
from .dataset import Dataset, SimpleDataset, ArrayDataset, RecordFileDataset  # noqa: F401
from .sampler import (Sampler, SequentialSampler, RandomSampler, FilterSampler,  # noqa: F401
                      BatchSampler)
from .dataloader import DataLoader, default_batchify_fn  # noqa: F401
from . import vision  # noqa: F401
