"""MXNet's ``mxnet.contrib.text.vocab``: ``Vocabulary``, the token <-> index tables that
token embeddings build on.

Index 0 is the unknown token, then the reserved tokens in their order, then the keys of a
``collections.Counter`` by falling frequency (ties by the tokens' own order), cut by
``min_freq`` and ``most_freq_count`` as in MXNet 1.9.1.
"""
from __future__ import annotations

import collections

from gpunda.base import GpundaAssertionError, GpundaValueError
from gpunda.contrib.text import _constants as C

__all__ = ["Vocabulary"]


def _check(cond, msg):
    if not cond:
        raise GpundaAssertionError(f"text.vocab.Vocabulary: {msg}")


class Vocabulary:
    """Indexes text tokens: the unknown token (index 0), ``reserved_tokens`` and the keys of
    ``counter`` kept by ``min_freq`` (at least that frequent) and ``most_freq_count`` (at
    most that many, reserved tokens not counted).

    Parameters
    ----------
    counter : collections.Counter or None
        Token frequencies; its keys are indexed most frequent first.
    most_freq_count : int or None
        The most keys of ``counter`` to index (None: no limit).
    min_freq : int, default 1
        The least frequency a key needs to be indexed (must be positive).
    unknown_token : hashable, default '<unk>'
        What every token outside the vocabulary maps to.
    reserved_tokens : list or None
        Tokens always indexed (padding, sentence marks); no duplicates, not the unknown token.
    """

    def __init__(self, counter=None, most_freq_count=None, min_freq=1, unknown_token="<unk>",
                 reserved_tokens=None):
        _check(min_freq > 0, f"min_freq={min_freq!r} must be positive")
        if reserved_tokens is not None:
            seen = set(reserved_tokens)
            _check(unknown_token not in seen,
                   f"reserved_tokens={reserved_tokens!r} must not hold the unknown_token "
                   f"{unknown_token!r}")
            _check(len(seen) == len(reserved_tokens),
                   f"reserved_tokens={reserved_tokens!r} holds duplicates")
        self._unknown_token = unknown_token
        self._reserved_tokens = None if reserved_tokens is None else list(reserved_tokens)
        self._idx_to_token = [unknown_token] + list(reserved_tokens or ())
        self._token_to_idx = {tok: i for i, tok in enumerate(self._idx_to_token)}
        if counter is not None:
            self._index_counter(counter, most_freq_count, min_freq)

    def _index_counter(self, counter, most_freq_count, min_freq):
        _check(isinstance(counter, collections.Counter),
               f"counter must be a collections.Counter, not {type(counter).__name__}")
        special = set(self._idx_to_token)
        cap = len(special) + (len(counter) if most_freq_count is None else most_freq_count)
        # frequency first (falling), then the tokens' own order: a stable sort by token
        # followed by one by frequency
        ranked = sorted(sorted(counter.items(), key=lambda kv: kv[0]),
                        key=lambda kv: kv[1], reverse=True)
        for token, freq in ranked:
            if freq < min_freq or len(self._idx_to_token) == cap:
                break
            if token in special:
                continue
            self._token_to_idx[token] = len(self._idx_to_token)
            self._idx_to_token.append(token)

    def __len__(self):
        return len(self._idx_to_token)

    @property
    def token_to_idx(self):
        """dict: each indexed token -> its index."""
        return self._token_to_idx

    @property
    def idx_to_token(self):
        """list: the indexed tokens, position = index."""
        return self._idx_to_token

    @property
    def unknown_token(self):
        """The token every unknown token is indexed as (index 0)."""
        return self._unknown_token

    @property
    def reserved_tokens(self):
        """The reserved tokens (a list), or None."""
        return self._reserved_tokens

    def to_indices(self, tokens):
        """The index of a token, or the list of indices of a list of tokens (0 when unknown)."""
        one = not isinstance(tokens, list)
        table = self._token_to_idx
        out = [table.get(t, C.UNKNOWN_IDX) for t in ([tokens] if one else tokens)]
        return out[0] if one else out

    def to_tokens(self, indices):
        """The token of an index, or the list of tokens of a list of indices."""
        one = not isinstance(indices, list)
        top = len(self._idx_to_token) - 1
        out = []
        for idx in [indices] if one else indices:
            if not isinstance(idx, int) or idx > top:
                raise GpundaValueError(f"text.vocab.Vocabulary.to_tokens: token index {idx!r} "
                                       f"is invalid (indices run from 0 to {top})")
            out.append(self._idx_to_token[idx])
        return out[0] if one else out
