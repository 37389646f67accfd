"""``python -m gpunda im2rec`` (MXNet's tools/im2rec.py): the .lst files against the listing
rules computed here, the .rec/.idx files read byte by byte with a RecordIO parser of the
test's own, the images against OpenCV. (By hand, the files were also compared with the
ones MXNet 1.9.1's tools/im2rec.py writes, with the same OpenCV: byte-identical.)"""
import os
import random
import struct

import numpy as np
import pytest

cv2 = pytest.importorskip("cv2", reason="im2rec needs opencv-python-headless ('gpunda[image]')")

import gpunda as mx  # noqa: E402
from gpunda._tools.im2rec import main  # noqa: E402

MAGIC = 0xCED7230A


@pytest.fixture
def tree(tmp_path, rng):
    """root/{cat,dog}/k.(png|jpg) plus a file that is not an image; the RGB arrays by path."""
    root = tmp_path / "images"
    pixels = {}
    for folder in ("cat", "dog"):
        (root / folder).mkdir(parents=True)
        for k in range(4):
            rel = f"{folder}/{k}.{'png' if k % 2 else 'jpg'}"
            bgr = rng.integers(0, 256, (20 + 2 * k, 28 - k, 3), dtype=np.uint8)
            assert cv2.imwrite(str(root / rel), bgr)
            pixels[rel] = cv2.imread(str(root / rel))
    (root / "notes.txt").write_text("not an image")
    (root / "top.png").write_bytes((root / "cat/1.png").read_bytes())
    pixels["top.png"] = pixels["cat/1.png"]
    return tmp_path, root, pixels


def _read_rec(path):
    """Records of a .rec file: [(offset, payload)], parsing the format independently."""
    data, out, pos = open(path, "rb").read(), [], 0
    while pos < len(data):
        start, parts = pos, []
        while True:
            magic, lrec = struct.unpack_from("<II", data, pos)
            assert magic == MAGIC
            cflag, length = lrec >> 29, lrec & ((1 << 29) - 1)
            parts.append(data[pos + 8:pos + 8 + length])
            pos += 8 + length + (-length % 4)
            if cflag in (0, 3):
                break
        out.append((start, struct.pack("<I", MAGIC).join(parts)))
    return out


def _header(payload):
    flag, label, rid, rid2 = struct.unpack_from("<IfQQ", payload)
    body = payload[24:]
    if flag:
        label = np.frombuffer(body[:4 * flag], np.float32)
        body = body[4 * flag:]
    return flag, label, rid, rid2, body


def _lst(path):
    return [line.rstrip("\n").split("\t") for line in open(path)]


def test_list_recursive_labels_folders_and_shuffles_as_mxnet(tree):
    tmp, root, _ = tree
    assert main([str(tmp / "all"), str(root), "--list", "--recursive"]) == 0
    rows = _lst(tmp / "all.lst")
    # a sorted walk; each folder gets the next label when its first image is met: root
    # (walked first, for top.png) 0, cat/ 1, dog/ 2; then Python's shuffle seeded with 100
    walk = [("top.png", 0)] + [(f"cat/{k}.{'png' if k % 2 else 'jpg'}", 1) for k in range(4)] \
        + [(f"dog/{k}.{'png' if k % 2 else 'jpg'}", 2) for k in range(4)]
    items = [(i, p, lb) for i, (p, lb) in enumerate(walk)]
    random.seed(100)
    random.shuffle(items)
    assert rows == [[str(i), "%f" % lb, p] for i, p, lb in items]


def test_list_plain_no_shuffle_exts_and_splits(tree):
    tmp, root, _ = tree
    main([str(tmp / "flat"), str(root / "cat"), "--list", "--no-shuffle", "--exts", ".PNG"])
    assert _lst(tmp / "flat.lst") == [["0", "0.000000", "1.png"], ["1", "0.000000", "3.png"]]
    main([str(tmp / "s"), str(root), "--list", "--recursive", "--train-ratio", "0.5",
          "--test-ratio", "0.25", "--chunks", "2"])
    # 9 images, chunks of 5: per chunk int(5*.25)=1 test, int(5*.5)=2 train, the rest val
    sizes = {name: len(_lst(tmp / name)) for name in sorted(os.listdir(tmp))
             if name.startswith("s_")}
    assert sizes == {"s_0_test.lst": 1, "s_0_train.lst": 2, "s_0_val.lst": 2,
                     "s_1_test.lst": 1, "s_1_train.lst": 2, "s_1_val.lst": 1}


def _pack(tmp, root, name, lines, *opts):
    (tmp / f"{name}.lst").write_text("".join(lines))
    assert main([str(tmp / name), str(root)] + list(opts)) == 0
    return _read_rec(tmp / f"{name}.rec"), _lst(tmp / f"{name}.idx")


def test_pack_headers_index_and_pixels(tree):
    tmp, root, pixels = tree
    lines = [f"{10 + k}\t{k * 0.5:f}\t{rel}\n" for k, rel in
             enumerate(["cat/1.png", "dog/3.png", "cat/0.jpg"])]
    recs, idx = _pack(tmp, root, "p", lines, "--encoding", ".png", "--resize", "12")
    assert idx == [[str(10 + k), str(off)] for k, (off, _) in enumerate(recs)]
    for k, ((_, payload), rel) in enumerate(zip(recs, ["cat/1.png", "dog/3.png", "cat/0.jpg"])):
        flag, label, rid, rid2, body = _header(payload)
        assert (flag, label, rid, rid2) == (0, k * 0.5, 10 + k, 0)
        src = pixels[rel]
        h, w = src.shape[:2]
        size = (12, h * 12 // w) if h > w else (w * 12 // h, 12)
        want = cv2.resize(src, size)                   # PNG is lossless: exact pixels
        np.testing.assert_array_equal(cv2.imdecode(np.frombuffer(body, np.uint8), -1), want)
    it = mx.image.ImageIter(3, (3, 12, 12), path_imgrec=str(tmp / "p.rec"),
                            path_imgidx=str(tmp / "p.idx"))
    assert it.next().label[0].asnumpy().tolist() == [0, 0.5, 1.0]


def test_pack_crop_grey_jpeg_quality(tree):
    tmp, root, pixels = tree
    recs, _ = _pack(tmp, root, "c", ["0\t1\tdog/2.jpg\n"], "--center-crop", "--color", "0",
                    "--quality", "70")
    body = _header(recs[0][1])[4]
    assert body[:2] == b"\xff\xd8"                      # JPEG
    grey = cv2.imread(str(root / "dog/2.jpg"), 0)
    h, w = grey.shape
    assert w > h
    m = (w - h) // 2
    _, want = cv2.imencode(".jpg", grey[:, m:m + h], [cv2.IMWRITE_JPEG_QUALITY, 70])
    assert body == want.tobytes()


def test_pass_through_and_pack_label(tree):
    tmp, root, _ = tree
    lines = ["3\t1.5\t-2\t7\tcat/3.png\n", "4\t2\tdog/0.jpg\n", "5\t1\tmissing.png\n"]
    recs, idx = _pack(tmp, root, "t", lines, "--pass-through", "--pack-label")
    assert [r[0] for r in idx] == ["3", "4"]            # the unreadable file is skipped
    flag, label, rid, _, body = _header(recs[0][1])
    assert (flag, rid) == (3, 3) and label.tolist() == [1.5, -2.0, 7.0]
    assert body == (root / "cat/3.png").read_bytes()
    flag, label, rid, _, body = _header(recs[1][1])     # one label: a plain float header
    assert (flag, label, rid) == (0, 2.0, 4) and body == (root / "dog/0.jpg").read_bytes()


def test_threads_write_the_same_files(tree):
    tmp, root, _ = tree
    main([str(tmp / "a"), str(root), "--list", "--recursive"])
    (tmp / "b.lst").write_bytes((tmp / "a.lst").read_bytes())
    main([str(tmp / "a"), str(root)])
    main([str(tmp / "b"), str(root), "--num-thread", "3"])
    for ext in ("rec", "idx"):
        assert (tmp / f"a.{ext}").read_bytes() == (tmp / f"b.{ext}").read_bytes()


def test_no_list_found(tmp_path, capsys):
    assert main([str(tmp_path / "none"), str(tmp_path)]) == 1
    assert "Did not find" in capsys.readouterr().out
