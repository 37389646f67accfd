"""mx.contrib.text (vocab, embedding, utils) against answers recorded from MXNet 1.9.1
(/work/mxref, the same calls)."""
import collections
import hashlib
import os
import warnings

import numpy as np
import pytest

import gpunda as mx
from gpunda.contrib import text


def test_count_tokens_from_str_matches_mxnet():
    c = text.utils.count_tokens_from_str(" Life is great ! \n life is good . \n", " ", "\n", True)
    assert sorted(c.items()) == [("!", 1), (".", 1), ("good", 1), ("great", 1), ("is", 2),
                                 ("life", 2)]
    base = collections.Counter({"a": 5})
    c2 = text.utils.count_tokens_from_str("*a*b**c*\n*a*", r"\*", "\n", False,
                                          counter_to_update=base)
    assert c2 is base and sorted(c2.items()) == [("a", 7), ("b", 1), ("c", 1)]


def test_vocabulary_order_caps_and_lookups_match_mxnet():
    counter = collections.Counter({"x": 2, "b": 2, "a": 2, "z": 3, "q": 1, "pad": 4})
    v = text.vocab.Vocabulary(counter, most_freq_count=3, min_freq=2, unknown_token="U",
                              reserved_tokens=["pad", "eos"])
    # MXNet 1.9.1: ties broken by the tokens' order, reserved tokens not counted in the cap
    assert v.idx_to_token == ["U", "pad", "eos", "z", "a", "b"]
    assert v.to_indices(["z", "nope", "a", "b"]) == [3, 0, 4, 5]
    assert v.to_indices("nope") == 0
    assert v.to_tokens([0, 2, 4]) == ["U", "eos", "a"]
    with pytest.raises(ValueError, match="index 9"):
        v.to_tokens(9)
    with pytest.raises(mx.MXNetError, match="min_freq"):
        text.vocab.Vocabulary(counter, min_freq=0)
    with pytest.raises(AssertionError, match="duplicates"):
        text.vocab.Vocabulary(counter, reserved_tokens=["a", "a"])
    with pytest.raises(AssertionError, match="Counter"):
        text.vocab.Vocabulary({"a": 1})


@pytest.fixture()
def embed_file(tmp_path):
    p = tmp_path / "e.txt"
    p.write_text("hdr 7\nk 1 2 3\nU 9 9 9\nj 4 5 6\nk 0 0 0\nU 8 8 8\n")
    return str(p)


def test_custom_embedding_file_rules_match_mxnet(embed_file):
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        e = text.embedding.CustomEmbedding(embed_file, " ", unknown_token="U")
    assert len([x for x in w if "skipped" in str(x.message)]) == 3   # header + 2 duplicates
    assert e.idx_to_token == ["U", "k", "j"] and e.vec_len == 3
    np.testing.assert_allclose(e.idx_to_vec.asnumpy(), [[9, 9, 9], [1, 2, 3], [4, 5, 6]])
    np.testing.assert_allclose(
        e.get_vecs_by_tokens(["K", "j"], lower_case_backup=True).asnumpy(),
        [[1, 2, 3], [4, 5, 6]])
    np.testing.assert_allclose(e.get_vecs_by_tokens("K").asnumpy(), [9, 9, 9])


def test_embedding_over_vocabulary_and_composite_match_mxnet(embed_file):
    e = text.embedding.CustomEmbedding(embed_file, " ", unknown_token="U")
    voc = text.vocab.Vocabulary(collections.Counter(["j", "j", "k", "new"]),
                                reserved_tokens=["<pad>"])
    e2 = text.embedding.CustomEmbedding(embed_file, " ", init_unknown_vec=mx.nd.ones,
                                        vocabulary=voc)
    assert e2.idx_to_token == ["<unk>", "<pad>", "j", "k", "new"]
    np.testing.assert_allclose(e2.idx_to_vec.asnumpy(),
                               [[1, 1, 1], [1, 1, 1], [4, 5, 6], [1, 2, 3], [1, 1, 1]])
    ce = text.embedding.CompositeEmbedding(voc, [e2, e])
    assert ce.vec_len == 6
    np.testing.assert_allclose(ce.idx_to_vec.asnumpy(),
                               [[1, 1, 1, 9, 9, 9], [1, 1, 1, 9, 9, 9], [4, 5, 6, 4, 5, 6],
                                [1, 2, 3, 1, 2, 3], [1, 1, 1, 9, 9, 9]])
    ce.update_token_vectors(["j", "<unk>"], mx.nd.array([[0] * 6, [2] * 6]))
    np.testing.assert_allclose(ce.idx_to_vec.asnumpy()[[0, 2]], [[2] * 6, [0] * 6])
    with pytest.raises(ValueError, match="unknown"):
        ce.update_token_vectors("nope", mx.nd.zeros(6))
    with pytest.raises(AssertionError, match="shape"):
        ce.update_token_vectors("j", mx.nd.zeros(5))


def test_embedding_in_numpy_mode_gives_np_arrays(embed_file):
    with mx.util.np_array(True):
        e = text.embedding.CustomEmbedding(embed_file, " ")
        assert isinstance(e.idx_to_vec, mx.np.ndarray)
        vecs = e.get_vecs_by_tokens(["k", "zz"])
        assert isinstance(vecs, mx.np.ndarray)
        np.testing.assert_allclose(vecs.asnumpy(), [[1, 2, 3], [0, 0, 0]])


def test_bad_files_are_refused(tmp_path):
    bad = tmp_path / "b.txt"
    bad.write_text("a 1 2\nb 1 2 3\n")
    with pytest.raises(AssertionError, match="same length"):
        text.embedding.CustomEmbedding(str(bad))
    bad.write_text("a 1 2\nc\n")
    with pytest.raises(AssertionError, match="line 2"):
        text.embedding.CustomEmbedding(str(bad))
    with pytest.raises(ValueError, match="pretrained_file_path"):
        text.embedding.CustomEmbedding(str(tmp_path / "missing.txt"))


def test_pretrained_tables_and_urls_match_mxnet():
    assert text.embedding.get_pretrained_file_names("glove") == [
        "glove.42B.300d.txt", "glove.6B.50d.txt", "glove.6B.100d.txt", "glove.6B.200d.txt",
        "glove.6B.300d.txt", "glove.840B.300d.txt", "glove.twitter.27B.25d.txt",
        "glove.twitter.27B.50d.txt", "glove.twitter.27B.100d.txt", "glove.twitter.27B.200d.txt"]
    names = text.embedding.get_pretrained_file_names()
    assert len(names["fasttext"]) == 327 and len(names["glove"]) == 10
    with pytest.raises(KeyError, match="unknown"):
        text.embedding.get_pretrained_file_names("unknown$$")
    with pytest.raises(KeyError, match="nope.txt"):
        text.embedding.GloVe("nope.txt")
    GloVe, FastText = text.embedding.GloVe, text.embedding.FastText
    assert GloVe._get_download_file_name("glove.twitter.27B.50d.txt") == "glove.twitter.27B.zip"
    repo = "https://apache-mxnet.s3-accelerate.dualstack.amazonaws.com/gluon/embeddings/"
    assert GloVe._get_pretrained_file_url("glove.6B.50d.txt") == repo + "glove/glove.6B.zip"
    assert FastText._get_pretrained_file_url("wiki.en.vec") == repo + "fasttext/wiki.en.zip"


class _Local(text.embedding._TokenEmbedding):
    """A registered embedding whose table holds one small file (as test_download_embed)."""
    pretrained_file_name_sha1 = {}

    def __init__(self, embedding_root, **kwargs):
        super().__init__(**kwargs)
        path = self._get_pretrained_file(embedding_root, "tiny.vec")
        self._load_embedding(path, " ", mx.nd.zeros)


def test_pretrained_file_found_locally_needs_no_download(tmp_path, monkeypatch):
    body = b"hello 1 2\nworld 3 4\n"
    os.makedirs(tmp_path / "_local")
    (tmp_path / "_local" / "tiny.vec").write_bytes(body)
    monkeypatch.setattr(_Local, "pretrained_file_name_sha1",
                        {"tiny.vec": hashlib.sha1(body).hexdigest()})
    monkeypatch.setenv("MXNET_GLUON_REPO", "http://127.0.0.1:9/")   # would fail if used
    text.embedding.register(_Local)
    e = text.embedding.create("_local", embedding_root=str(tmp_path))
    assert e.token_to_idx == {"<unk>": 0, "hello": 1, "world": 2}
    np.testing.assert_allclose(e.idx_to_vec.asnumpy(), [[0, 0], [1, 2], [3, 4]])


def test_failed_download_says_where_to_put_the_file(tmp_path, monkeypatch):
    monkeypatch.setenv("MXNET_GLUON_REPO", "http://127.0.0.1:9/")   # nothing listens there
    with pytest.raises(mx.MXNetError) as info:
        text.embedding.GloVe("glove.6B.50d.txt", embedding_root=str(tmp_path))
    msg = str(info.value)
    assert os.path.join(str(tmp_path), "glove", "glove.6B.50d.txt") in msg
    assert "http://127.0.0.1:9/gluon/embeddings/glove/glove.6B.zip" in msg
    assert "CustomEmbedding" in msg
