"""Gluon data: datasets, samplers and the DataLoader (MXNet 1.x ``gluon.data``)."""
from gpunda.gluon.data.dataset import Dataset, SimpleDataset, ArrayDataset, RecordFileDataset  # noqa: F401
from gpunda.gluon.data.sampler import (Sampler, SequentialSampler, RandomSampler, FilterSampler,  # noqa: F401
                      BatchSampler)
from gpunda.gluon.data.dataloader import DataLoader, default_batchify_fn  # noqa: F401
from gpunda.gluon.data import vision  # noqa: F401
