"""Datasets the DataLoader worker tests share; module-level, so that forkserver and spawn
workers can unpickle them."""
import gpunda as mx
from gpunda.gluon import data as gdata


class Squares(gdata.Dataset):
    """23 samples: (full((3,), i * i), i)."""

    def __len__(self):
        return 23

    def __getitem__(self, i):
        return mx.nd.full((3,), i * i), i


class Failing(Squares):
    """Squares whose sample 13 raises ValueError("bad sample")."""

    def __getitem__(self, i):
        if i == 13:
            raise ValueError("bad sample")
        return super().__getitem__(i)
