"""MXNet's ``mxnet.gluon.contrib.data.text``: the WikiText-2 and WikiText-103 language-model
data sets, read from local files.

A segment is the file ``wiki.<train|valid|test>.tokens`` in ``root``
(``$MXNET_HOME/datasets/wikitext-2`` by default), or the data set's zip archive
(``wikitext-2-v1.zip``) in ``root``, unpacked on first use. gpunda downloads nothing, as for
its vision data sets: when neither is there, a GpundaError names the file and where MXNet
gets it. Samples are ``(data, label)`` rows of ``seq_len`` token indices (int32), the label
the data shifted by one token; every line ends with ``<eos>``.
"""
from __future__ import annotations

import os
import shutil
import zipfile

import numpy as np

from gpunda.base import GpundaError, GpundaValueError, data_dir
from gpunda.gluon.contrib.data import _constants as C
from gpunda.gluon.data import dataset

__all__ = ["WikiText2", "WikiText103"]


class _LanguageModelDataset(dataset._DownloadedDataset):
    """A text data set with a vocabulary (given, or built from the text with ``<eos>``
    reserved) and the token frequencies of its text."""

    def __init__(self, root, namespace, vocabulary):
        self._vocab = vocabulary
        self._counter = None
        self._namespace = namespace
        super().__init__(root, None)

    @property
    def vocabulary(self):
        """The ``contrib.text.vocab.Vocabulary`` indexing the tokens."""
        return self._vocab

    @property
    def frequencies(self):
        """The ``collections.Counter`` of the tokens of this segment's text."""
        return self._counter

    def _build_vocab(self, content):
        from gpunda.contrib import text
        if not self._counter:
            self._counter = text.utils.count_tokens_from_str(content)
        if not self._vocab:
            self._vocab = text.vocab.Vocabulary(counter=self._counter,
                                                reserved_tokens=[C.EOS_TOKEN])


class _WikiText(_LanguageModelDataset):

    def _read_batch(self, filename):
        with open(filename, "r", encoding="utf8") as f:
            content = f.read()
        self._build_vocab(content)
        tokens = []
        for line in content.splitlines():
            words = line.split()
            if words:
                tokens.extend(words)
                tokens.append(C.EOS_TOKEN)
        ids = self.vocabulary.to_indices(tokens)
        return np.array(ids[:-1], dtype=np.int32), np.array(ids[1:], dtype=np.int32)

    def _unpack(self, archive):
        with zipfile.ZipFile(archive, "r") as zf:
            for member in zf.namelist():
                name = os.path.basename(member)
                if name:
                    with zf.open(member) as src, \
                            open(os.path.join(self._root, name), "wb") as dst:
                        shutil.copyfileobj(src, dst)

    def _get_data(self):
        from gpunda import ndarray as nd
        if self._segment not in self._data_file:
            raise GpundaValueError(f"{type(self).__name__}: segment={self._segment!r} must be "
                                   f"one of {sorted(self._data_file)}")
        archive_name, _ = self._archive_file
        data_name, _ = self._data_file[self._segment]
        path = os.path.join(self._root, data_name)
        archive = os.path.join(self._root, archive_name)
        if not os.path.exists(path) and os.path.exists(archive):
            self._unpack(archive)
        if not os.path.exists(path):
            from gpunda.gluon.utils import _get_repo_file_url
            url = _get_repo_file_url("gluon/dataset/" + self._namespace, archive_name)
            raise GpundaError(f"{type(self).__name__}: {path} does not exist; gpunda downloads "
                              f"nothing, so put {data_name} (or the archive {archive_name}, "
                              f"from {url}) in {self._root} (or pass root= the folder that "
                              f"holds it)")
        data, label = self._read_batch(path)
        # whole rows of seq_len tokens only (MXNet cuts the tail the same way)
        n = len(data) // self._seq_len * self._seq_len
        self._data = nd.array(data[:n], dtype=data.dtype).reshape((-1, self._seq_len))
        self._label = nd.array(label[:n], dtype=label.dtype).reshape((-1, self._seq_len))

    def __getitem__(self, idx):
        return self._data[idx], self._label[idx]

    def __len__(self):
        return len(self._label)


class WikiText2(_WikiText):
    """WikiText-2 (Salesforce research; CC BY-SA): rows of ``seq_len`` token indices.

    Parameters
    ----------
    root : str, default $MXNET_HOME/datasets/wikitext-2
        The folder holding ``wiki.train.tokens`` & co. (or ``wikitext-2-v1.zip``).
    segment : str, default 'train'
        'train', 'validation' or 'test'.
    vocab : contrib.text.vocab.Vocabulary or None
        The vocabulary to index with; None builds one from the segment's text.
    seq_len : int, default 35
        The tokens per sample.
    """

    def __init__(self, root=None, segment="train", vocab=None, seq_len=35):
        self._archive_file = ("wikitext-2-v1.zip", "3c914d17d80b1459be871a5039ac23e752a53cbe")
        self._data_file = {
            "train": ("wiki.train.tokens", "863f29c46ef9d167fff4940ec821195882fe29d1"),
            "validation": ("wiki.valid.tokens", "0418625c8b4da6e4b5c7a0b9e78d4ae8f7ee5422"),
            "test": ("wiki.test.tokens", "c7b8ce0aa086fb34dab808c5c49224211eb2b172")}
        self._segment = segment
        self._seq_len = seq_len
        if root is None:
            root = os.path.join(data_dir(), "datasets", "wikitext-2")
        super().__init__(root, "wikitext-2", vocab)


class WikiText103(_WikiText):
    """WikiText-103 (Salesforce research; CC BY-SA): rows of ``seq_len`` token indices.

    Parameters as ``WikiText2``'s; the default root is
    ``$MXNET_HOME/datasets/wikitext-103`` and the archive ``wikitext-103-v1.zip``.
    """

    def __init__(self, root=None, segment="train", vocab=None, seq_len=35):
        self._archive_file = ("wikitext-103-v1.zip", "0aec09a7537b58d4bb65362fee27650eeaba625a")
        self._data_file = {
            "train": ("wiki.train.tokens", "b7497e2dfe77e72cfef5e3dbc61b7b53712ac211"),
            "validation": ("wiki.valid.tokens", "c326ac59dc587676d58c422eb8a03e119582f92b"),
            "test": ("wiki.test.tokens", "8a5befc548865cec54ed4273cf87dbbad60d1e47")}
        self._segment = segment
        self._seq_len = seq_len
        if root is None:
            root = os.path.join(data_dir(), "datasets", "wikitext-103")
        super().__init__(root, "wikitext-103", vocab)
