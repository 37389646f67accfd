"""RecordIO files (MXNet's ``mx.recordio``): ``.rec`` records and ``.idx`` indexes.

The on-disk layout is dmlc-core's: every part starts with the magic word
0xced7230a and a little-endian uint32 ``cflag << 29 | length``, then ``length``
bytes padded with zeros to a multiple of 4.  A payload that holds the magic
word at a 4-aligned offset is split there (the magic itself is not stored):
cflag 1 starts such a record, 2 continues it and 3 ends it; cflag 0 is a
whole record.  Files written here read in MXNet and the other way round.
"""
from __future__ import annotations

import numbers
import os
import struct
from collections import namedtuple

import numpy as np

from gpunda.base import GpundaError

__all__ = ["MXRecordIO", "MXIndexedRecordIO", "IRHeader", "pack", "unpack",
           "pack_img", "unpack_img"]

_MAGIC = 0xCED7230A
_MAGIC_BYTES = struct.pack("<I", _MAGIC)
_LEN_MASK = (1 << 29) - 1
_MAX_RECORD = 1 << 29


def _encode_record(buf: bytes) -> bytes:
    """The bytes one record takes in a .rec file (split at aligned magic words)."""
    n = len(buf)
    if n >= _MAX_RECORD:
        raise GpundaError(f"MXRecordIO.write: a record must be smaller than 2^29 bytes, got {n}")
    parts, start = [], 0
    pos = buf.find(_MAGIC_BYTES)
    while pos != -1:
        if pos % 4 == 0 and pos + 4 <= (n >> 2) << 2:
            parts.append(struct.pack("<II", _MAGIC, ((1 if start == 0 else 2) << 29) | (pos - start)))
            parts.append(buf[start:pos])
            start = pos + 4
            pos = buf.find(_MAGIC_BYTES, start)
        else:
            pos = buf.find(_MAGIC_BYTES, pos + 1)
    parts.append(struct.pack("<II", _MAGIC, ((3 if start else 0) << 29) | (n - start)))
    parts.append(buf[start:])
    parts.append(b"\0" * (-n % 4))
    return b"".join(parts)


class MXRecordIO:
    """Sequential reader or writer of a RecordIO (.rec) file.

    ``flag`` is ``'r'`` or ``'w'`` (writing truncates).  A pickled object keeps
    its path and mode and reopens the file when unpickled, as MXNet's does.
    """

    def __init__(self, uri, flag):
        self.uri = os.fspath(uri)
        if flag not in ("r", "w"):
            raise ValueError(f"Invalid flag {flag}")
        self.flag = flag
        self.handle = None
        self.pid = None
        self.is_open = False
        self.open()

    def open(self):
        """Open (or reopen, from the start) the file."""
        if self.handle is not None:
            self.handle.close()
        try:
            self.handle = open(self.uri, "wb" if self.flag == "w" else "rb")
        except OSError as e:
            raise GpundaError(f"MXRecordIO: cannot open {self.uri!r} for "
                              f"{'writing' if self.flag == 'w' else 'reading'}: {e}") from e
        self.writable = self.flag == "w"
        self.pid = os.getpid()
        self.is_open = True
        self._record = 0

    def __del__(self):
        try:
            self.close()
        except Exception:  # interpreter shutdown: nothing left to release
            pass

    def __getstate__(self):
        is_open = self.is_open
        self.close()
        d = dict(self.__dict__)
        d["is_open"] = is_open
        d["handle"] = None
        return d

    def __setstate__(self, d):
        self.__dict__ = d
        is_open = d["is_open"]
        self.is_open = False
        self.handle = None
        if is_open:
            self.open()

    def _check_pid(self, allow_reset=False):
        # a file object shared across fork would share its offset: reopen per process
        if self.pid != os.getpid():
            if not allow_reset:
                # MXNet raises RuntimeError here too
                raise RuntimeError(f"MXRecordIO {self.uri!r}: forbidden operation in multiple "
                                   f"processes (a writer cannot be shared across a fork)")
            self.reset()

    def close(self):
        """Close the file (a closed object can be ``open()``ed again)."""
        if not getattr(self, "is_open", False):
            return
        self.handle.close()
        self.handle = None
        self.is_open = False
        self.pid = None

    def reset(self):
        """Go back to the start of the file (a writer starts the file over)."""
        self.close()
        self.open()

    def _need(self, writing):
        if not self.is_open:
            raise GpundaError(f"MXRecordIO {self.uri!r} is closed")
        if writing != self.writable:
            raise GpundaError(f"MXRecordIO {self.uri!r} is opened with flag {self.flag!r}, "
                              f"cannot {'write' if writing else 'read'}")

    def write(self, buf):
        """Append one record (bytes-like)."""
        self._need(True)
        self._check_pid(allow_reset=False)
        self.handle.write(_encode_record(bytes(buf)))
        self._record += 1

    def read(self):
        """The next record as bytes, or None at the end of the file."""
        self._need(False)
        self._check_pid(allow_reset=True)
        f = self.handle
        start = f.tell()
        chunks = []
        while True:
            off = f.tell()
            head = f.read(8)
            if not head and not chunks:
                return None
            if len(head) < 8:
                self._corrupt(start, off, f"truncated header ({len(head)} of 8 bytes)")
            magic, lrec = struct.unpack("<II", head)
            if magic != _MAGIC:
                self._corrupt(start, off, f"bad magic 0x{magic:08x} (expected 0x{_MAGIC:08x})")
            cflag, length = lrec >> 29, lrec & _LEN_MASK
            if cflag > 3 or (chunks and cflag not in (2, 3)) or (not chunks and cflag not in (0, 1)):
                self._corrupt(start, off, f"unexpected continuation flag {cflag}")
            padded = length + (-length % 4)
            body = f.read(padded)
            if len(body) < padded:
                self._corrupt(start, off, f"truncated payload ({len(body)} of {padded} bytes)")
            chunks.append(body[:length])
            if cflag in (0, 3):
                break
            chunks.append(_MAGIC_BYTES)
        self._record += 1
        return b"".join(chunks)

    def _corrupt(self, start, off, what):
        raise GpundaError(f"MXRecordIO.read: {self.uri!r} is corrupt at offset {off} "
                          f"(record {self._record}, starting at offset {start}): {what}")

    def tell(self):
        """Byte offset where the next record is read or written."""
        if not self.is_open:
            raise GpundaError(f"MXRecordIO {self.uri!r} is closed")
        return self.handle.tell()

    def _seek(self, pos):
        self._need(False)
        self._check_pid(allow_reset=True)
        self.handle.seek(pos)


class MXIndexedRecordIO(MXRecordIO):
    """RecordIO with random access through an index file of ``key\\toffset`` lines.

    ``key_type`` converts the keys read from the index (int by default).
    """

    def __init__(self, idx_path, uri, flag, key_type=int):
        self.idx_path = os.fspath(idx_path)
        self.idx = {}
        self.keys = []
        self.key_type = key_type
        self.fidx = None
        super().__init__(uri, flag)

    def open(self):
        super().open()
        self.idx = {}
        self.keys = []
        try:
            self.fidx = open(self.idx_path, self.flag)
        except OSError as e:
            raise GpundaError(f"MXIndexedRecordIO: cannot open index {self.idx_path!r}: {e}") from e
        if not self.writable:
            for lineno, line in enumerate(iter(self.fidx.readline, ""), 1):
                fields = line.strip().split("\t")
                if fields == [""]:
                    continue
                try:
                    key, pos = self.key_type(fields[0]), int(fields[1])
                except (IndexError, ValueError) as e:
                    raise GpundaError(f"MXIndexedRecordIO: {self.idx_path!r} line {lineno} is not "
                                      f"'key<TAB>offset': {line.rstrip()!r}") from e
                self.idx[key] = pos
                self.keys.append(key)

    def close(self):
        if not getattr(self, "is_open", False):
            return
        super().close()
        if self.fidx is not None:
            self.fidx.close()
            self.fidx = None

    def __getstate__(self):
        d = super().__getstate__()
        d["fidx"] = None
        return d

    def seek(self, idx):
        """Position the reader at the record with key ``idx``."""
        if idx not in self.idx:
            raise KeyError(idx)
        self._seek(self.idx[idx])

    def tell(self):
        return super().tell()

    def read_idx(self, idx):
        """The record with key ``idx``."""
        self.seek(idx)
        return self.read()

    def write_idx(self, idx, buf):
        """Write a record and index it under key ``idx``."""
        key = self.key_type(idx)
        pos = self.tell()
        self.write(buf)
        self.fidx.write(f"{key}\t{pos}\n")
        self.idx[key] = pos
        self.keys.append(key)


IRHeader = namedtuple("HEADER", ["flag", "label", "id", "id2"])
IRHeader.__doc__ = """Image record header: flag (number of float labels, or 0), label, id, id2."""
_IR_FORMAT = "IfQQ"
_IR_SIZE = struct.calcsize(_IR_FORMAT)


def pack(header, s):
    """Prefix bytes ``s`` with an IRHeader; an array label is stored as float32 after it."""
    header = IRHeader(*header)
    if isinstance(header.label, numbers.Number):
        header = header._replace(flag=0)
    else:
        label = np.asarray(header.label, dtype=np.float32)
        header = header._replace(flag=label.size, label=0)
        s = label.tobytes() + s
    return struct.pack(_IR_FORMAT, *header) + s


def unpack(s):
    """Split a packed record into (IRHeader, payload bytes)."""
    if len(s) < _IR_SIZE:
        raise GpundaError(f"recordio.unpack: record of {len(s)} bytes is shorter than "
                          f"the {_IR_SIZE}-byte header")
    header = IRHeader(*struct.unpack(_IR_FORMAT, s[:_IR_SIZE]))
    s = s[_IR_SIZE:]
    if header.flag > 0:
        if len(s) < 4 * header.flag:
            raise GpundaError(f"recordio.unpack: header says {header.flag} labels but only "
                              f"{len(s)} bytes follow")
        header = header._replace(label=np.frombuffer(s, np.float32, header.flag))
        s = s[header.flag * 4:]
    return header, s


def _cv2():
    try:
        import cv2
    except ImportError as e:
        raise GpundaError("recordio.pack_img/unpack_img need OpenCV (pip install "
                          "opencv-python-headless)") from e
    return cv2


def pack_img(header, img, quality=95, img_fmt=".jpg"):
    """Encode image array ``img`` (HxW or HxWxC, BGR) with OpenCV and pack it."""
    cv2 = _cv2()
    fmt = img_fmt.lower()
    params = []
    if fmt in (".jpg", ".jpeg"):
        params = [cv2.IMWRITE_JPEG_QUALITY, quality]
    elif fmt == ".png":
        params = [cv2.IMWRITE_PNG_COMPRESSION, quality]
    ok, buf = cv2.imencode(img_fmt, np.asarray(img), params)
    if not ok:
        raise GpundaError(f"pack_img: OpenCV failed to encode the image as {img_fmt!r}")
    return pack(header, buf.tobytes())


def unpack_img(s, iscolor=-1):
    """Unpack a record made by pack_img into (IRHeader, decoded image array)."""
    header, s = unpack(s)
    cv2 = _cv2()
    img = cv2.imdecode(np.frombuffer(s, dtype=np.uint8), iscolor)
    if img is None:
        raise GpundaError("unpack_img: OpenCV could not decode the record's image bytes")
    return header, img
