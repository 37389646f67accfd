"""``python -m gpunda im2rec``: MXNet's ``tools/im2rec.py``, making image lists and RecordIO
datasets that MXNet and gpunda read alike.

``--list`` walks a folder and writes ``PREFIX.lst`` (tab separated: index, label(s), path
relative to ROOT); ``--recursive`` gives each sub-folder a label of its own. Without
``--list`` every ``PREFIX*.lst`` is packed into ``.rec`` + ``.idx`` files beside it: each
image is read with OpenCV (or taken as is, ``--pass-through``), optionally centre-cropped to a
square and resized (shorter edge), encoded and stored under an IRHeader whose ``id`` is the
list's index. Records keep the list's order whatever ``--num-thread`` is.
"""
from __future__ import annotations

import argparse
import os
import random
import sys
import time
from concurrent.futures import ThreadPoolExecutor

from gpunda.base import GpundaError

_SHUFFLE_SEED = 100   # tools/im2rec.py seeds its shuffle with 100: same lists as MXNet's
_WINDOW = 1024        # images encoded ahead of the writer


def list_images(root, recursive, exts):
    """Yield ``(index, path relative to root, label)`` for the images under ``root``, in
    sorted order; with ``recursive`` each folder is a label (numbered in walk order)."""
    i = 0
    if recursive:
        labels = {}
        for path, dirs, files in os.walk(root, followlinks=True):
            dirs.sort()
            files.sort()
            for fname in files:
                fpath = os.path.join(path, fname)
                if os.path.isfile(fpath) and os.path.splitext(fname)[1].lower() in exts:
                    labels.setdefault(path, len(labels))
                    yield (i, os.path.relpath(fpath, root), labels[path])
                    i += 1
        for path, label in sorted(labels.items(), key=lambda kv: kv[1]):
            print(os.path.relpath(path, root), label)
        return
    for fname in sorted(os.listdir(root)):
        fpath = os.path.join(root, fname)
        if os.path.isfile(fpath) and os.path.splitext(fname)[1].lower() in exts:
            yield (i, os.path.relpath(fpath, root), 0)
            i += 1


def write_list(path, items):
    """Write ``(index, path, label, ...)`` items as .lst lines (labels as ``%f``)."""
    with open(path, "w") as f:
        for item in items:
            labels = "".join("%f\t" % v for v in item[2:])
            f.write("%d\t%s%s\n" % (item[0], labels, item[1]))


def make_list(args):
    """Write ``PREFIX[_chunk][_train|_val|_test].lst`` for the images under ``args.root``."""
    items = list(list_images(args.root, args.recursive, tuple(e.lower() for e in args.exts)))
    if args.shuffle:
        random.seed(_SHUFFLE_SEED)
        random.shuffle(items)
    chunk_size = (len(items) + args.chunks - 1) // args.chunks
    for c in range(args.chunks):
        chunk = items[c * chunk_size:(c + 1) * chunk_size]
        name = args.prefix + (f"_{c}" if args.chunks > 1 else "")
        n_train = int(chunk_size * args.train_ratio)
        n_test = int(chunk_size * args.test_ratio)
        if args.train_ratio == 1.0:
            write_list(name + ".lst", chunk)
            continue
        if args.test_ratio:
            write_list(name + "_test.lst", chunk[:n_test])
        if args.train_ratio + args.test_ratio < 1.0:
            write_list(name + "_val.lst", chunk[n_test + n_train:])
        write_list(name + "_train.lst", chunk[n_test:n_test + n_train])


def read_list(path):
    """Yield ``[index, path, label, ...]`` for each well-formed line of a .lst file; a
    malformed line is reported and skipped, as MXNet's tool does."""
    with open(path) as f:
        for line in f:
            fields = [v.strip() for v in line.strip().split("\t")]
            if len(fields) < 3:
                print(f"lst should have at least has three parts, but only has {len(fields)} "
                      f"parts for {fields}")
                continue
            try:
                yield [int(fields[0]), fields[-1]] + [float(v) for v in fields[1:-1]]
            except ValueError as e:
                print(f"Parsing lst met error for {fields}, detail: {e}")


def encode_image(args, item):
    """The packed record of one list item, or None (reported) if it cannot be read."""
    from gpunda import recordio
    fullpath = os.path.join(args.root, item[1])
    label = item[2:] if len(item) > 3 and args.pack_label else item[2]
    header = recordio.IRHeader(0, label, item[0], 0)
    if args.pass_through:
        try:
            with open(fullpath, "rb") as f:
                return recordio.pack(header, f.read())
        except OSError as e:
            print("pack_img error:", item[1], e)
            return None
    import cv2
    img = cv2.imread(fullpath, args.color)
    if img is None:
        print(f"imread read blank (None) image for file: {fullpath}")
        return None
    if args.center_crop:
        h, w = img.shape[:2]
        if h > w:
            img = img[(h - w) // 2:(h - w) // 2 + w]
        else:
            img = img[:, (w - h) // 2:(w - h) // 2 + h]
    if args.resize:
        h, w = img.shape[:2]
        size = (args.resize, h * args.resize // w) if h > w else (w * args.resize // h,
                                                                   args.resize)
        img = cv2.resize(img, size)
    try:
        return recordio.pack_img(header, img, quality=args.quality, img_fmt=args.encoding)
    except GpundaError as e:
        print(f"pack_img error on file: {fullpath}", e)
        return None


def write_record(args, lst_path, working_dir):
    """Pack the images of one .lst into ``<name>.rec`` + ``<name>.idx`` in working_dir."""
    from gpunda import recordio
    name = os.path.splitext(os.path.basename(lst_path))[0]
    record = recordio.MXIndexedRecordIO(os.path.join(working_dir, name + ".idx"),
                                        os.path.join(working_dir, name + ".rec"), "w")
    items = list(read_list(lst_path))
    start, count = time.time(), 0
    try:
        with ThreadPoolExecutor(max(1, args.num_thread)) as pool:
            # map keeps the list's order; OpenCV releases the GIL while it decodes. Windows
            # bound how many encoded images wait in memory.
            for lo in range(0, len(items), _WINDOW):
                window = items[lo:lo + _WINDOW]
                for item, rec in zip(window, pool.map(lambda it: encode_image(args, it),
                                                      window)):
                    if rec is not None:
                        record.write_idx(item[0], rec)
                    if count % 1000 == 0:
                        now = time.time()
                        print("time:", now - start, " count:", count)
                        start = now
                    count += 1
    finally:
        record.close()


def pack_lists(args):
    """Pack every ``PREFIX*.lst``; 1 if there is none."""
    working_dir = args.prefix if os.path.isdir(args.prefix) else os.path.dirname(args.prefix)
    lists = sorted(os.path.join(working_dir, f) for f in os.listdir(working_dir)
                   if os.path.isfile(os.path.join(working_dir, f)))
    lists = [f for f in lists if f.startswith(args.prefix) and f.endswith(".lst")]
    for lst in lists:
        print("Creating .rec file from", lst, "in", working_dir)
        write_record(args, lst, working_dir)
    if not lists:
        print(f"Did not find and list file with prefix {args.prefix}")
        return 1
    return 0


def parser():
    """The argument parser (MXNet's options and defaults)."""
    p = argparse.ArgumentParser(
        prog="python -m gpunda im2rec", formatter_class=argparse.ArgumentDefaultsHelpFormatter,
        description="Create an image list (--list) or make a RecordIO database (.rec/.idx) "
                    "from the image lists PREFIX*.lst, as MXNet's tools/im2rec.py.")
    p.add_argument("prefix", help="prefix of input/output lst and rec files")
    p.add_argument("root", help="path to folder containing images")
    g = p.add_argument_group("Options for creating image lists")
    g.add_argument("--list", action="store_true",
                   help="create image list(s) PREFIX.lst by traversing root instead of "
                        "packing PREFIX*.lst into .rec files")
    g.add_argument("--exts", nargs="+", default=[".jpeg", ".jpg", ".png"],
                   help="list of acceptable image extensions")
    g.add_argument("--chunks", type=int, default=1, help="number of chunks to split into")
    g.add_argument("--train-ratio", type=float, default=1.0,
                   help="ratio of images to use for training")
    g.add_argument("--test-ratio", type=float, default=0,
                   help="ratio of images to use for testing")
    g.add_argument("--recursive", action="store_true",
                   help="walk sub-folders and give the images of each folder a label of its "
                        "own; otherwise only images in root, with label 0")
    g.add_argument("--shuffle", action=argparse.BooleanOptionalAction, default=True,
                   help="randomize the image order in the list (seed 100, as MXNet's); "
                        "--no-shuffle keeps the sorted order")
    g = p.add_argument_group("Options for creating database")
    g.add_argument("--pass-through", action="store_true",
                   help="store the image files as they are, without decoding or transforms")
    g.add_argument("--resize", type=int, default=0,
                   help="resize the shorter edge of each image to this size (0 keeps the size)")
    g.add_argument("--center-crop", action="store_true",
                   help="crop the centre square of each image")
    g.add_argument("--quality", type=int, default=95,
                   help="JPEG quality for encoding, 1-100; or PNG compression, 1-9")
    g.add_argument("--num-thread", type=int, default=1,
                   help="number of threads encoding images (records keep the list's order)")
    g.add_argument("--color", type=int, default=1, choices=[-1, 0, 1],
                   help="colour mode of loaded images: 1 colour (alpha dropped), 0 grayscale, "
                        "-1 as stored (alpha kept)")
    g.add_argument("--encoding", type=str, default=".jpg", choices=[".jpg", ".png"],
                   help="encoding of the stored images")
    g.add_argument("--pack-label", action="store_true",
                   help="store all the labels of a list line (a float array) in the record, "
                        "not only the first")
    return p


def main(argv=None):
    """Entry point of ``python -m gpunda im2rec``."""
    args = parser().parse_args(sys.argv[1:] if argv is None else argv)
    args.prefix, args.root = os.path.abspath(args.prefix), os.path.abspath(args.root)
    if args.chunks < 1:
        raise GpundaError(f"im2rec: --chunks={args.chunks} must be >= 1")
    if args.list:
        make_list(args)
        return 0
    try:
        import cv2  # noqa: F401
    except ImportError:
        if not args.pass_through:
            raise GpundaError("im2rec needs OpenCV to decode images: pip install "
                              "'gpunda[image]' (or use --pass-through)") from None
    return pack_lists(args)
