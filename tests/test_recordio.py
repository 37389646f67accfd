"""mx.recordio against .rec/.idx files written by real MXNet 1.9.1 (tests/data/make_recordio_fixtures.py)."""
import os
import pickle
import struct

import numpy as np
import pytest

import gpunda as mx
from gpunda.base import GpundaError

DATA = os.path.join(os.path.dirname(__file__), "data", "recordio")
MAGIC = struct.pack("<I", 0xCED7230A)
# the payloads the fixture script wrote, in order
RECORDS = [b"", b"a", b"ab", b"abc", b"abcd", b"hello world",
           MAGIC, b"xy" + MAGIC, b"abcd" + MAGIC + b"efgh" + MAGIC + MAGIC + b"z",
           MAGIC + b"12", b"1234" + MAGIC, bytes(range(256)) * 3]


def _read_all(r):
    out = []
    while (rec := r.read()) is not None:
        out.append(rec)
    return out


def test_reads_mxnet_file():
    r = mx.recordio.MXRecordIO(os.path.join(DATA, "plain.rec"), "r")
    assert _read_all(r) == RECORDS
    r.reset()
    assert r.read() == b""


def test_writes_mxnet_bytes(tmp_path):
    w = mx.recordio.MXRecordIO(tmp_path / "x.rec", "w")
    for rec in RECORDS:
        w.write(rec)
    w.close()
    with open(os.path.join(DATA, "plain.rec"), "rb") as f:
        assert (tmp_path / "x.rec").read_bytes() == f.read()


def test_indexed_matches_mxnet(tmp_path):
    r = mx.recordio.MXIndexedRecordIO(os.path.join(DATA, "indexed.idx"),
                                      os.path.join(DATA, "indexed.rec"), "r")
    assert r.keys == [i * 10 for i in range(len(RECORDS))]
    for k in reversed(r.keys):
        assert r.read_idx(k) == RECORDS[k // 10]
    w = mx.recordio.MXIndexedRecordIO(tmp_path / "y.idx", tmp_path / "y.rec", "w")
    for i, rec in enumerate(RECORDS):
        w.write_idx(i * 10, rec)
    w.close()
    for name in ("idx", "rec"):
        with open(os.path.join(DATA, "indexed." + name), "rb") as f:
            assert (tmp_path / ("y." + name)).read_bytes() == f.read()


def test_unpack_mxnet_packed_records():
    r = mx.recordio.MXRecordIO(os.path.join(DATA, "packed.rec"), "r")
    h, s = mx.recordio.unpack(r.read())
    assert (h.flag, h.label, h.id, h.id2, s) == (0, 3.5, 7, 9, b"payload")
    h, s = mx.recordio.unpack(r.read())
    assert h.flag == 3 and s == b"multi" and (h.id, h.id2) == (11, 12)
    np.testing.assert_array_equal(h.label, np.array([1.0, 2.5, -3.0], np.float32))
    # packing the same headers gives the same bytes
    r.reset()
    assert r.read() == mx.recordio.pack((0, 3.5, 7, 9), b"payload")
    assert r.read() == mx.recordio.pack((0, [1.0, 2.5, -3.0], 11, 12), b"multi")


def test_pack_img_roundtrip_png_is_lossless():
    pytest.importorskip("cv2")
    img = (np.arange(8 * 6 * 3) % 251).astype(np.uint8).reshape(8, 6, 3)
    s = mx.recordio.pack_img((0, 4.0, 13, 0), img, img_fmt=".png")
    h, out = mx.recordio.unpack_img(s)
    assert h.label == 4.0 and h.id == 13
    np.testing.assert_array_equal(out, img)
    h, gray = mx.recordio.unpack_img(s, 0)
    assert gray.shape == (8, 6)
    _, jpg = mx.recordio.unpack_img(mx.recordio.pack_img((0, 1, 0, 0), img, quality=100))
    assert jpg.shape == img.shape and np.abs(jpg.astype(int) - img).mean() < 8


def test_pickle_reopens(tmp_path):
    r = mx.recordio.MXRecordIO(os.path.join(DATA, "plain.rec"), "r")
    r.read()
    r2 = pickle.loads(pickle.dumps(r))
    assert r2.is_open and r2.read() == b""  # reopened at the start
    ri = mx.recordio.MXIndexedRecordIO(os.path.join(DATA, "indexed.idx"),
                                       os.path.join(DATA, "indexed.rec"), "r")
    ri2 = pickle.loads(pickle.dumps(ri))
    assert ri2.read_idx(50) == RECORDS[5]


@pytest.mark.parametrize("cut", [3, 9, 13, 30])
def test_truncated_file_names_file_offset_record(tmp_path, cut):
    with open(os.path.join(DATA, "plain.rec"), "rb") as f:
        data = f.read()
    p = tmp_path / "t.rec"
    p.write_bytes(data[:len(data) - cut])
    r = mx.recordio.MXRecordIO(p, "r")
    with pytest.raises(GpundaError, match=r"t\.rec.*offset \d+.*record 11"):
        _read_all(r)


def test_bad_magic_and_flag(tmp_path):
    p = tmp_path / "b.rec"
    p.write_bytes(b"\0" * 16)
    with pytest.raises(GpundaError, match="offset 0.*record 0.*bad magic"):
        mx.recordio.MXRecordIO(p, "r").read()
    p.write_bytes(MAGIC + struct.pack("<I", (2 << 29) | 0))
    with pytest.raises(GpundaError, match="continuation flag 2"):
        mx.recordio.MXRecordIO(p, "r").read()


def test_misuse(tmp_path):
    with pytest.raises(ValueError):
        mx.recordio.MXRecordIO(tmp_path / "a.rec", "a")
    with pytest.raises(GpundaError, match="cannot open"):
        mx.recordio.MXRecordIO(tmp_path / "missing.rec", "r")
    w = mx.recordio.MXRecordIO(tmp_path / "a.rec", "w")
    with pytest.raises(GpundaError, match="cannot read"):
        w.read()
    w.close()
    with pytest.raises(GpundaError, match="closed"):
        w.write(b"x")
    with pytest.raises(GpundaError, match="shorter"):
        mx.recordio.unpack(b"abc")
    (tmp_path / "bad.idx").write_text("1\tnotanumber\n")
    (tmp_path / "bad.rec").write_bytes(b"")
    with pytest.raises(GpundaError, match="line 1"):
        mx.recordio.MXIndexedRecordIO(tmp_path / "bad.idx", tmp_path / "bad.rec", "r")


def test_reader_reopens_after_fork_and_writer_refuses(tmp_path):
    r = mx.recordio.MXRecordIO(os.path.join(DATA, "plain.rec"), "r")
    r.read()
    r.pid = -1  # as if this object came from another process
    assert r.read() == b""  # reopened from the start
    w = mx.recordio.MXRecordIO(tmp_path / "w.rec", "w")
    w.pid = -1
    with pytest.raises(RuntimeError, match="multiple processes"):
        w.write(b"x")
