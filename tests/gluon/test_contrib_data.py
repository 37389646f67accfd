"""mx.gluon.contrib.data (IntervalSampler, WikiText2/103 over local files) against answers
recorded from MXNet 1.9.1 (/work/mxref, the same files; its SHA-1 check bypassed)."""
import zipfile

import numpy as np
import pytest

import gpunda as mx
from gpunda.gluon.contrib import data as cdata

TRAIN = (" = Title = \n\n the cat sat on the mat . \n the dog sat . \n\n"
         " a b c d e f g h i j k l m n o p \n")


def test_interval_sampler_matches_mxnet():
    s = cdata.IntervalSampler(13, interval=3)
    assert list(s) == [0, 3, 6, 9, 12, 1, 4, 7, 10, 2, 5, 8, 11] and len(s) == 13
    s = cdata.IntervalSampler(13, interval=3, rollover=False)
    assert list(s) == [0, 3, 6, 9, 12] and len(s) == 13       # MXNet's len, rollover or not
    assert list(cdata.IntervalSampler(5, interval=5)) == [0, 1, 2, 3, 4]
    with pytest.raises(AssertionError, match="interval=4"):
        cdata.IntervalSampler(3, interval=4)
    loader = mx.gluon.data.DataLoader(mx.gluon.data.ArrayDataset(np.arange(6)), batch_size=3,
                                      sampler=cdata.IntervalSampler(6, 2))
    assert [b.asnumpy().tolist() for b in loader] == [[0, 2, 4], [1, 3, 5]]


def test_wikitext2_from_local_files_matches_mxnet(tmp_path):
    (tmp_path / "wiki.train.tokens").write_text(TRAIN)
    (tmp_path / "wiki.valid.tokens").write_text(" the cat . \n zebra \n")
    d = cdata.text.WikiText2(root=str(tmp_path), segment="train", seq_len=5)
    assert len(d) == 6
    assert d.vocabulary.idx_to_token[:6] == ["<unk>", "<eos>", "the", ".", "=", "sat"]
    assert len(d.vocabulary) == 27 and d.frequencies["the"] == 3
    data, label = d[1]
    assert isinstance(data, mx.nd.NDArray) and data.dtype == np.int32
    assert data.asnumpy().tolist() == [10, 5, 25, 2, 22]
    assert label.asnumpy().tolist() == [5, 25, 2, 22, 3]
    assert d._data.asnumpy()[-1].tolist() == [17, 18, 19, 20, 21]
    v = cdata.text.WikiText2(root=str(tmp_path), segment="validation", vocab=d.vocabulary,
                             seq_len=2)
    assert v._data.asnumpy().tolist() == [[2, 10], [3, 1]]      # zebra is cut (tail)
    assert sorted(v.frequencies.items()) == [(".", 1), ("cat", 1), ("the", 1), ("zebra", 1)]


def test_wikitext_unpacks_a_local_archive(tmp_path):
    with zipfile.ZipFile(tmp_path / "wikitext-103-v1.zip", "w") as zf:
        zf.writestr("wikitext-103/wiki.test.tokens", TRAIN)
    d = cdata.text.WikiText103(root=str(tmp_path), segment="test", seq_len=5)
    assert (tmp_path / "wiki.test.tokens").read_text() == TRAIN
    assert d[0][0].asnumpy().tolist() == [4, 6, 4, 1, 2]


def test_wikitext_missing_file_names_it(tmp_path):
    with pytest.raises(mx.MXNetError, match="wiki.test.tokens.*wikitext-2-v1.zip"):
        cdata.text.WikiText2(root=str(tmp_path / "none"), segment="test")
    with pytest.raises(ValueError, match="segment='dev'"):
        cdata.text.WikiText2(root=str(tmp_path), segment="dev")
