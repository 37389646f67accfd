"""Text data for RNNs: ``encode_sentences`` and the bucketing ``BucketSentenceIter``."""
import bisect
import random

import numpy as np

from gpunda import ndarray
from gpunda.base import GpundaError
from gpunda.io import DataIter, DataBatch, DataDesc


def encode_sentences(sentences, vocab=None, invalid_label=-1, invalid_key="\n", start_label=0,
                     unknown_token=None):
    """Map each word to an integer id: (list of id lists, vocab dict).

    Without ``vocab`` one is built, ids counting from ``start_label`` and skipping
    ``invalid_label`` (which ``invalid_key`` maps to). With a ``vocab``, unseen words are
    an error unless ``unknown_token`` is given; they then map to that token (added to
    ``vocab`` if new)."""
    idx = start_label
    new_vocab = vocab is None
    if new_vocab:
        vocab = {invalid_key: invalid_label}
    encoded = []
    for sentence in sentences:
        coded = []
        for word in sentence:
            if word not in vocab:
                if not (new_vocab or unknown_token):
                    raise GpundaError(f"Unknown token {word}")
                if idx == invalid_label:
                    idx += 1
                if unknown_token:
                    word = unknown_token
                if word not in vocab:   # MXNet 1.9.1 re-numbers a known unknown_token here
                    vocab[word] = idx
                    idx += 1
            coded.append(vocab[word])
        encoded.append(coded)
    return encoded, vocab


class BucketSentenceIter(DataIter):
    """Batches of equal-length padded sentences for bucketing: each sentence goes to the
    smallest bucket that holds it (padded with ``invalid_label``); the label is the data
    shifted left by one step. ``layout`` is 'NT' (batch major) or 'TN'."""

    def __init__(self, sentences, batch_size, buckets=None, invalid_label=-1, data_name="data",
                 label_name="softmax_label", dtype="float32", layout="NT"):
        super().__init__()
        if not buckets:
            counts = np.bincount([len(s) for s in sentences])
            buckets = [length for length, n in enumerate(counts) if n >= batch_size]
        buckets = sorted(buckets)
        if not buckets:
            raise GpundaError(f"BucketSentenceIter: no bucket holds batch_size={batch_size} "
                              f"sentences; pass buckets= or a smaller batch_size")
        self.major_axis = layout.find("N")
        if self.major_axis not in (0, 1) or sorted(layout) != ["N", "T"]:
            raise ValueError(f"Invalid layout {layout}: Must by NT (batch major) or TN "
                             f"(time major)")
        ndiscard = 0
        self.data = [[] for _ in buckets]
        for sentence in sentences:
            b = bisect.bisect_left(buckets, len(sentence))
            if b == len(buckets):
                ndiscard += 1
                continue
            row = np.full((buckets[b],), invalid_label, dtype=dtype)
            row[:len(sentence)] = sentence
            self.data[b].append(row)
        self.data = [np.asarray(rows, dtype=dtype).reshape(len(rows), length)
                     for rows, length in zip(self.data, buckets)]
        if ndiscard:
            print(f"WARNING: discarded {ndiscard} sentences longer than the largest bucket.")
        self.batch_size = batch_size
        self.buckets = buckets
        self.data_name, self.label_name = data_name, label_name
        self.dtype, self.invalid_label, self.layout = dtype, invalid_label, layout
        self.nddata, self.ndlabel = [], []
        self.default_bucket_key = max(buckets)
        self.provide_data = [DataDesc(data_name, self._shape(self.default_bucket_key),
                                      layout=layout)]
        self.provide_label = [DataDesc(label_name, self._shape(self.default_bucket_key),
                                       layout=layout)]
        self.idx = [(i, j) for i, rows in enumerate(self.data)
                    for j in range(0, len(rows) - batch_size + 1, batch_size)]
        self.curr_idx = 0
        self.reset()

    def _shape(self, length):
        return (self.batch_size, length) if self.major_axis == 0 else (length, self.batch_size)

    def reset(self):
        """Shuffle the batches and the sentences within each bucket."""
        self.curr_idx = 0
        random.shuffle(self.idx)
        for rows in self.data:
            np.random.shuffle(rows)
        self.nddata, self.ndlabel = [], []
        for rows in self.data:
            label = np.empty_like(rows)
            label[:, :-1] = rows[:, 1:]
            label[:, -1] = self.invalid_label
            self.nddata.append(ndarray.array(rows, dtype=self.dtype))
            self.ndlabel.append(ndarray.array(label, dtype=self.dtype))

    def next(self):
        """The next DataBatch (its ``bucket_key`` is the sentence length)."""
        if self.curr_idx == len(self.idx):
            raise StopIteration
        i, j = self.idx[self.curr_idx]
        self.curr_idx += 1
        data = self.nddata[i][j:j + self.batch_size]
        label = self.ndlabel[i][j:j + self.batch_size]
        if self.major_axis == 1:
            data, label = data.T, label.T
        return DataBatch([data], [label], pad=0, bucket_key=self.buckets[i],
                         provide_data=[DataDesc(self.data_name, data.shape, layout=self.layout)],
                         provide_label=[DataDesc(self.label_name, label.shape,
                                                 layout=self.layout)])


__all__ = ["encode_sentences", "BucketSentenceIter"]
