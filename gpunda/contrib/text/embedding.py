"""MXNet's ``mxnet.contrib.text.embedding``: token embeddings (a ``Vocabulary`` whose
tokens each have a vector in ``idx_to_vec``) loaded from text files.

``CustomEmbedding`` reads any local file of lines ``token<delim>v1<delim>v2...``;
``GloVe`` and ``FastText`` read MXNet's pretrained files from
``embedding_root/<glove|fasttext>/<file>`` (``$MXNET_HOME/embeddings`` by default). A file
that is not there (or whose SHA-1 differs from MXNet's table) is downloaded from MXNet's
repository as MXNet does; when that download fails (no network), a GpundaError names the
file, its address and where to put it. ``CompositeEmbedding`` concatenates embeddings over
a vocabulary. ``register``/``create``/``get_pretrained_file_names`` work on the registry of
embedding classes.
"""
from __future__ import annotations

import logging
import os
import tarfile
import warnings
import zipfile

from gpunda import ndarray as nd
from gpunda import registry
from gpunda.base import GpundaAssertionError, GpundaError, GpundaValueError, data_dir
from gpunda.contrib.text import _constants as C
from gpunda.contrib.text import vocab
from gpunda.util import is_np_array

__all__ = ["register", "create", "get_pretrained_file_names", "GloVe", "FastText",
           "CustomEmbedding", "CompositeEmbedding"]


class UnknownEmbeddingError(GpundaError, KeyError):
    """An embedding name or pretrained file name that is not registered (MXNet: KeyError)."""

    def __str__(self):          # KeyError would print the message quoted
        return str(self.args[0]) if self.args else ""


def _check(cond, where, msg):
    if not cond:
        raise GpundaAssertionError(f"text.embedding.{where}: {msg}")


def register(embedding_cls):
    """Class decorator registering a ``_TokenEmbedding`` subclass under its lower-case name,
    so that ``create(name)`` makes one."""
    return registry.get_register_func(_TokenEmbedding, "token embedding")(embedding_cls)


def create(embedding_name, **kwargs):
    """A token embedding of the registered class ``embedding_name`` (case-insensitive),
    made with ``kwargs``."""
    return registry.get_create_func(_TokenEmbedding, "token embedding")(embedding_name,
                                                                          **kwargs)


def get_pretrained_file_names(embedding_name=None):
    """The pretrained file names of the embedding ``embedding_name`` (a list), or of every
    registered embedding (a dict name -> list) when None."""
    table = registry.get_registry(_TokenEmbedding)
    if embedding_name is None:
        return {name: list(cls.pretrained_file_name_sha1) for name, cls in table.items()}
    if embedding_name not in table:
        raise UnknownEmbeddingError(
            f"text.embedding.get_pretrained_file_names: cannot find embedding_name "
            f"{embedding_name!r}; the registered names are {sorted(table)}")
    return list(table[embedding_name].pretrained_file_name_sha1)


def _np_mode_fns():
    """(array, zeros) of the front end in use: mx.np in NumPy mode, else mx.nd."""
    if is_np_array():
        from gpunda import numpy as mnp
        return mnp.array, mnp.zeros
    return nd.array, nd.zeros


class _TokenEmbedding(vocab.Vocabulary):
    """The base of token embeddings: a ``Vocabulary`` plus ``idx_to_vec`` (one row per
    index; row 0 is the unknown token's vector) and ``vec_len``.

    Loading a file indexes its tokens in file order after the unknown and reserved tokens;
    a token seen again is skipped with a warning, as is a line with a one-element vector
    (a header). The unknown token's row is its vector in the file when the file has it,
    else ``init_unknown_vec(shape=vec_len)``.
    """

    pretrained_file_name_sha1 = {}

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self._vec_len = None
        self._idx_to_vec = None

    # -- pretrained files ---------------------------------------------------------------

    @classmethod
    def _get_download_file_name(cls, pretrained_file_name):
        return pretrained_file_name

    @classmethod
    def _get_pretrained_file_url(cls, pretrained_file_name):
        repo_url = os.environ.get("MXNET_GLUON_REPO", C.APACHE_REPO_URL)
        if not repo_url.endswith("/"):
            repo_url += "/"
        return (f"{repo_url}gluon/embeddings/{cls.__name__.lower()}/"
                f"{cls._get_download_file_name(pretrained_file_name)}")

    @classmethod
    def _get_pretrained_file(cls, embedding_root, pretrained_file_name):
        """The path of ``pretrained_file_name`` under ``embedding_root/<class name>``,
        downloaded (and unpacked) first when it is missing or its SHA-1 differs."""
        from gpunda.gluon.utils import check_sha1, download
        folder = os.path.join(os.path.expanduser(embedding_root), cls.__name__.lower())
        path = os.path.join(folder, pretrained_file_name)
        url = cls._get_pretrained_file_url(pretrained_file_name)
        fetched = os.path.join(folder, os.path.basename(url))
        file_hash = cls.pretrained_file_name_sha1[pretrained_file_name]
        archives = getattr(cls, "pretrained_archive_name_sha1", None)
        fetched_hash = archives[os.path.basename(url)] if archives is not None else file_hash
        if os.path.exists(path) and check_sha1(path, file_hash):
            return path
        try:
            download(url, fetched, sha1_hash=fetched_hash)
        except Exception as err:  # noqa: BLE001 - every failure gets the same advice
            state = ("has a different SHA-1 than MXNet's table" if os.path.exists(path)
                     else "is not there")
            raise GpundaError(
                f"text.embedding.{cls.__name__}: the pretrained file {path!r} {state}, and "
                f"downloading it from {url} failed ({type(err).__name__}: {err}); put the "
                f"file (SHA-1 {file_hash}) there, or load a local file with "
                f"text.embedding.CustomEmbedding") from err
        ext = os.path.splitext(fetched)[1]
        if ext == ".zip":
            with zipfile.ZipFile(fetched, "r") as zf:
                zf.extractall(folder)
        elif ext == ".gz":
            with tarfile.open(fetched, "r:gz") as tar:
                tar.extractall(path=folder)
        return path

    @classmethod
    def _check_pretrained_file_names(cls, pretrained_file_name):
        if pretrained_file_name not in cls.pretrained_file_name_sha1:
            name = cls.__name__.lower()
            raise UnknownEmbeddingError(
                f"text.embedding: cannot find pretrained file {pretrained_file_name!r} for "
                f"token embedding {name}; valid pretrained files for {name}: "
                f"{', '.join(cls.pretrained_file_name_sha1)}")

    # -- loading ------------------------------------------------------------------------

    def _load_embedding(self, pretrained_file_path, elem_delim, init_unknown_vec,
                        encoding="utf8"):
        path = os.path.expanduser(pretrained_file_path)
        if not os.path.isfile(path):
            raise GpundaValueError(f"text.embedding: pretrained_file_path={path!r} must be "
                                   f"the path of a pretrained token embedding file")
        logging.info("Loading pre-trained token embedding vectors from %s", path)
        where = type(self).__name__
        vec_len = None
        rows = []
        seen = set()
        unknown_vec = None
        with open(path, "r", encoding=encoding) as f:
            for line_num, line in enumerate(f, 1):
                parts = line.rstrip().split(elem_delim)
                _check(len(parts) > 1, where,
                       f"line {line_num} of the pretrained token embedding file {path!r} has "
                       f"no vector: its format is unexpected")
                token, vec = parts[0], [float(v) for v in parts[1:]]
                if token == self._unknown_token and unknown_vec is None:
                    unknown_vec = vec
                    seen.add(token)
                elif token in seen:
                    warnings.warn(f"At line {line_num} of the pretrained token embedding "
                                  f"file: the vector of token {token} was loaded before; "
                                  f"this duplicate is skipped.")
                elif len(vec) == 1:
                    warnings.warn(f"At line {line_num} of the pretrained token embedding "
                                  f"file: token {token} with the 1-element vector {vec} is "
                                  f"likely a header and is skipped.")
                else:
                    if vec_len is None:
                        vec_len = len(vec)
                    _check(len(vec) == vec_len, where,
                           f"line {line_num} of the pretrained token embedding file: token "
                           f"{token} has {len(vec)} elements, the tokens before it "
                           f"{vec_len}; every vector must have the same length")
                    rows.append(vec)
                    self._token_to_idx[token] = len(self._idx_to_token)
                    self._idx_to_token.append(token)
                    seen.add(token)
        array_fn, _ = _np_mode_fns()
        self._vec_len = vec_len
        if vec_len is None:     # no vectors at all: MXNet makes an empty (0, ?) array too
            raise GpundaValueError(f"text.embedding.{where}: the pretrained token embedding "
                                   f"file {path!r} holds no token vectors")
        table = [[0.0] * vec_len] + rows
        self._idx_to_vec = array_fn(table).reshape((-1, vec_len))
        if unknown_vec is None:
            init = init_unknown_vec(shape=vec_len)
            self._idx_to_vec[C.UNKNOWN_IDX] = (init.as_np_ndarray() if is_np_array()
                                               and hasattr(init, "as_np_ndarray") else init)
        else:
            self._idx_to_vec[C.UNKNOWN_IDX] = array_fn(unknown_vec)

    def _index_tokens_from_vocabulary(self, vocabulary):
        self._token_to_idx = dict(vocabulary.token_to_idx)
        self._idx_to_token = list(vocabulary.idx_to_token)
        self._unknown_token = vocabulary.unknown_token
        self._reserved_tokens = (None if vocabulary.reserved_tokens is None
                                 else list(vocabulary.reserved_tokens))

    def _set_idx_to_vec_by_embeddings(self, token_embeddings, vocab_len, vocab_idx_to_token):
        """``idx_to_vec`` for the ``vocab_len`` tokens ``vocab_idx_to_token``: the
        embeddings' vectors side by side (row 0: their unknown vectors)."""
        _, zeros_fn = _np_mode_fns()
        width = sum(e.vec_len for e in token_embeddings)
        table = zeros_fn(shape=(vocab_len, width))
        col = 0
        for e in token_embeddings:
            end = col + e.vec_len
            table[0, col:end] = e.idx_to_vec[0]
            if vocab_len > 1:
                table[1:, col:end] = e.get_vecs_by_tokens(list(vocab_idx_to_token[1:]))
            col = end
        self._vec_len = width
        self._idx_to_vec = table

    def _load_pretrained(self, source, pretrained_file_name, embedding_root, init_unknown_vec,
                         vocabulary):
        """Load ``source``'s (GloVe's, FastText's) pretrained file, space-separated, from
        ``embedding_root`` (``data_dir()/embeddings`` when None), then index
        ``vocabulary``'s tokens if one is given."""
        root = os.path.join(data_dir(), "embeddings") if embedding_root is None else embedding_root
        self._load_embedding(source._get_pretrained_file(root, pretrained_file_name), " ",
                             init_unknown_vec)
        self._build_embedding_for_vocabulary(vocabulary)

    def _build_embedding_for_vocabulary(self, vocabulary):
        if vocabulary is None:
            return
        _check(isinstance(vocabulary, vocab.Vocabulary), type(self).__name__,
               "vocabulary must be a mxnet.contrib.text.vocab.Vocabulary")
        self._set_idx_to_vec_by_embeddings([self], len(vocabulary), vocabulary.idx_to_token)
        self._index_tokens_from_vocabulary(vocabulary)

    # -- the public surface -------------------------------------------------------------

    @property
    def vec_len(self):
        """The length of each token's vector."""
        return self._vec_len

    @property
    def idx_to_vec(self):
        """The (len(self), vec_len) array of vectors, row = token index."""
        return self._idx_to_vec

    def get_vecs_by_tokens(self, tokens, lower_case_backup=False):
        """The vector of a token (1-D), or the (n, vec_len) vectors of a list of tokens;
        unknown tokens get row 0. With ``lower_case_backup``, a token not found as it is is
        looked up lower-cased."""
        one = not isinstance(tokens, list)
        if one:
            tokens = [tokens]
        table = self._token_to_idx
        if lower_case_backup:
            idx = [table[t] if t in table else table.get(t.lower(), C.UNKNOWN_IDX)
                   for t in tokens]
        else:
            idx = [table.get(t, C.UNKNOWN_IDX) for t in tokens]
        rows, width = self._idx_to_vec.shape
        if is_np_array():
            from gpunda import numpy as mnp
            from gpunda import numpy_extension as mnpx
            vecs = mnpx.embedding(mnp.array(idx), self._idx_to_vec, rows, width)
        else:
            vecs = nd.Embedding(nd.array(idx), self._idx_to_vec, rows, width)
        return vecs[0] if one else vecs

    def update_token_vectors(self, tokens, new_vectors):
        """Set the vectors of ``tokens`` (a token or a list) to ``new_vectors`` (1-D or 2-D
        for one token, (len(tokens), vec_len) for several). The unknown token must be named
        as itself; any other token outside the vocabulary is a ValueError."""
        where = "update_token_vectors"
        _check(self._idx_to_vec is not None, where, "idx_to_vec has not been set")
        is_array = isinstance(new_vectors, nd.NDArray)
        if not isinstance(tokens, list) or len(tokens) == 1:
            _check(is_array and len(new_vectors.shape) in (1, 2), where,
                   "new_vectors must be a 1-D or 2-D NDArray when tokens is one token")
            if not isinstance(tokens, list):
                tokens = [tokens]
            if len(new_vectors.shape) == 1:
                new_vectors = new_vectors.reshape((1, -1))
        else:
            _check(is_array and len(new_vectors.shape) == 2, where,
                   "new_vectors must be a 2-D NDArray when tokens is a list of several tokens")
        _check(tuple(new_vectors.shape) == (len(tokens), self._vec_len), where,
               f"new_vectors has the shape {tuple(new_vectors.shape)}; it must be "
               f"{(len(tokens), self._vec_len)} (one row per token, vec_len columns)")
        idx = []
        for t in tokens:
            if t not in self._token_to_idx:
                raise GpundaValueError(
                    f"text.embedding.{where}: token {t} is unknown. To update the vector of "
                    f"the unknown token, name it as the unknown_token "
                    f"{self._idx_to_token[C.UNKNOWN_IDX]} in tokens (this avoids updating "
                    f"it by mistake)")
            idx.append(self._token_to_idx[t])
        array_fn, _ = _np_mode_fns()
        self._idx_to_vec[array_fn(idx, dtype="int64")] = new_vectors


@register
class GloVe(_TokenEmbedding):
    """The GloVe word vectors (https://nlp.stanford.edu/projects/glove/), from the text file
    ``pretrained_file_name`` under ``embedding_root/glove`` (see the module's note on
    downloads). ``vocabulary``: index its tokens instead of the file's."""

    # MXNet's tables, with MXNet's (crossed) names: archives -> SHA-1, text files -> SHA-1
    pretrained_archive_name_sha1 = C.GLOVE_PRETRAINED_FILE_SHA1
    pretrained_file_name_sha1 = C.GLOVE_PRETRAINED_ARCHIVE_SHA1

    @classmethod
    def _get_download_file_name(cls, pretrained_file_name):
        # glove.6B.50d.txt comes in glove.6B.zip: match on the corpus part of the name
        by_corpus = {a.split(".")[1]: a for a in cls.pretrained_archive_name_sha1}
        return by_corpus[pretrained_file_name.split(".")[1]]

    def __init__(self, pretrained_file_name="glove.840B.300d.txt", embedding_root=None,
                 init_unknown_vec=nd.zeros, vocabulary=None, **kwargs):
        GloVe._check_pretrained_file_names(pretrained_file_name)
        super().__init__(**kwargs)
        self._load_pretrained(GloVe, pretrained_file_name, embedding_root, init_unknown_vec,
                              vocabulary)


@register
class FastText(_TokenEmbedding):
    """The fastText word vectors (https://fasttext.cc/), from the ``.vec`` file
    ``pretrained_file_name`` under ``embedding_root/fasttext`` (see the module's note on
    downloads). ``vocabulary``: index its tokens instead of the file's."""

    pretrained_archive_name_sha1 = C.FAST_TEXT_ARCHIVE_SHA1
    pretrained_file_name_sha1 = C.FAST_TEXT_FILE_SHA1

    @classmethod
    def _get_download_file_name(cls, pretrained_file_name):
        return pretrained_file_name.rsplit(".", 1)[0] + ".zip"

    def __init__(self, pretrained_file_name="wiki.simple.vec", embedding_root=None,
                 init_unknown_vec=nd.zeros, vocabulary=None, **kwargs):
        FastText._check_pretrained_file_names(pretrained_file_name)
        super().__init__(**kwargs)
        self._load_pretrained(FastText, pretrained_file_name, embedding_root, init_unknown_vec,
                              vocabulary)


class CustomEmbedding(_TokenEmbedding):
    """Token vectors from a local file of lines ``token<elem_delim>v1<elem_delim>v2...``
    (read with ``encoding``). ``vocabulary``: index its tokens instead of the file's."""

    def __init__(self, pretrained_file_path, elem_delim=" ", encoding="utf8",
                 init_unknown_vec=nd.zeros, vocabulary=None, **kwargs):
        super().__init__(**kwargs)
        self._load_embedding(pretrained_file_path, elem_delim, init_unknown_vec, encoding)
        if vocabulary is not None:
            self._build_embedding_for_vocabulary(vocabulary)


class CompositeEmbedding(_TokenEmbedding):
    """The tokens of ``vocabulary`` with the vectors of ``token_embeddings`` (one
    embedding or a list, concatenated in order)."""

    def __init__(self, vocabulary, token_embeddings):
        _check(isinstance(vocabulary, vocab.Vocabulary), "CompositeEmbedding",
               "vocabulary must be a mxnet.contrib.text.vocab.Vocabulary")
        if not isinstance(token_embeddings, list):
            token_embeddings = [token_embeddings]
        for e in token_embeddings:
            _check(isinstance(e, _TokenEmbedding), "CompositeEmbedding",
                   f"token_embeddings must be token embeddings, not {type(e).__name__}")
        self._index_tokens_from_vocabulary(vocabulary)
        self._set_idx_to_vec_by_embeddings(token_embeddings, len(self), self.idx_to_token)
