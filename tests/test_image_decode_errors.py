"""Empty and corrupt image buffers raise MXNetError, as MXNet 1.9.1's decoders do.

Recorded from real MXNet 1.9.1 (/work/mxref; ``t`` prints the exception)::

    mx.image.imdecode(b'')                 -> MXNetError: Check failed: len > 0: Input cannot be an empty buffer
    mx.image.imdecode(b'garbage' * 10)     -> MXNetError: Check failed: !res.empty(): Decoding failed. Invalid image file.
    mx.image.imdecode(np.zeros(0, np.uint8)) / mx.nd.array([], dtype='uint8')  -> the empty-buffer MXNetError
    mx.image.imdecode('abc') / (None)      -> ValueError: buf must be of type bytes, bytearray or numpy.ndarray,...
    mx.image.imdecode(nd uint8 array of a JPEG).shape -> (16, 16, 3)
    mx.image.imdecode(nd float32 array)    -> MXNetError: Check failed: inputs[0].dtype() == mshadow::kUint8
    mx.image.imread(missing)               -> MXNetError: Imread: Check failed: file.is_open(): ... couldn't open file
    mx.image.imread(corrupt file) / nd._internal._cvimread(corrupt) -> the "Decoding failed" MXNetError
    mx.image.imread(empty file)            -> MXNetError (OpenCV's !buf.empty() assertion)
    ImageRecordDataset(rec)[i] of an empty / corrupt record -> the two MXNetErrors above
    ImageIter(...).next() over a corrupt record -> RuntimeError: Broken image index: 0, ... Decoding failed
"""
import os

import numpy as np
import pytest

import gpunda as mx
from gpunda.base import MXNetError

cv2 = pytest.importorskip("cv2")


def _jpeg():
    img = (np.arange(16 * 16 * 3).reshape(16, 16, 3) % 251).astype(np.uint8)
    return cv2.imencode(".jpg", img)[1].tobytes()


@pytest.mark.parametrize("buf", [b"", bytearray(), np.zeros(0, np.uint8)])
def test_empty_buffer(buf):
    with pytest.raises(MXNetError, match="empty buffer"):
        mx.image.imdecode(buf)


def test_empty_ndarray_buffer():
    with pytest.raises(MXNetError, match="empty buffer"):
        mx.image.imdecode(mx.nd.array([], dtype="uint8"))
    with pytest.raises(MXNetError, match="empty buffer"):
        mx.nd._internal._cvimdecode(mx.nd.array([], dtype="uint8"))


@pytest.mark.parametrize("make", [lambda b: b, lambda b: np.frombuffer(b, np.uint8),
                                  lambda b: mx.nd.array(np.frombuffer(b, np.uint8),
                                                        dtype="uint8")])
def test_corrupt_buffer(make):
    with pytest.raises(MXNetError, match="Decoding failed. Invalid image file"):
        mx.image.imdecode(make(b"garbage" * 10))


def test_corrupt_buffer_op():
    buf = mx.nd.array(np.frombuffer(b"garbage" * 10, np.uint8), dtype="uint8")
    with pytest.raises(MXNetError, match="Decoding failed"):
        mx.nd._internal._cvimdecode(buf)


def test_wrong_type_is_value_error():
    for buf in ("abc", None, [1, 2]):
        with pytest.raises(ValueError, match="bytes, bytearray or numpy.ndarray"):
            mx.image.imdecode(buf)


def test_ndarray_buffer_decodes_and_needs_uint8():
    raw = np.frombuffer(_jpeg(), np.uint8)
    img = mx.image.imdecode(mx.nd.array(raw, dtype="uint8"))
    assert img.shape == (16, 16, 3)
    np.testing.assert_array_equal(img.asnumpy(), mx.image.imdecode(raw.tobytes()).asnumpy())
    with pytest.raises(MXNetError, match="uint8"):
        mx.image.imdecode(mx.nd.array(raw))


def test_imread_missing_corrupt_empty(tmp_path):
    bad = tmp_path / "bad.jpg"
    bad.write_bytes(b"notanimage" * 10)
    empty = tmp_path / "empty.jpg"
    empty.write_bytes(b"")
    with pytest.raises(MXNetError, match="missing.jpg"):
        mx.image.imread(str(tmp_path / "missing.jpg"))
    with pytest.raises(MXNetError, match="Decoding failed"):
        mx.img.imread(str(bad))
    with pytest.raises(MXNetError, match="empty buffer"):
        mx.image.imread(str(empty))
    with pytest.raises(MXNetError, match="Decoding failed"):
        mx.nd._internal._cvimread(filename=str(bad))
    with pytest.raises(MXNetError, match="empty buffer"):
        mx.nd._internal._cvimread(filename=str(empty))


def _rec(tmp_path, payloads):
    rec, idx = str(tmp_path / "x.rec"), str(tmp_path / "x.idx")
    w = mx.recordio.MXIndexedRecordIO(idx, rec, "w")
    for i, p in enumerate(payloads):
        w.write_idx(i, mx.recordio.pack(mx.recordio.IRHeader(0, 1.0, i, 0), p))
    w.close()
    return rec, idx


def test_record_dataset_and_iters(tmp_path):
    rec, idx = _rec(tmp_path, [b"", b"garbage" * 10, _jpeg()])
    ds = mx.gluon.data.vision.ImageRecordDataset(rec)
    with pytest.raises(MXNetError, match="empty buffer"):
        ds[0]
    with pytest.raises(MXNetError, match="Decoding failed"):
        ds[1]
    assert ds[2][0].shape == (16, 16, 3)
    with pytest.raises(RuntimeError, match="Broken image index: 0"):
        mx.image.ImageIter(1, (3, 8, 8), path_imgrec=rec, path_imgidx=idx).next()
    with pytest.raises(MXNetError):
        mx.io.ImageRecordIter(path_imgrec=rec, data_shape=(3, 8, 8), batch_size=1).next()
