"""Augmentation fixture: what real MXNet 1.9.1's ImageRecordIter / ImageDetRecordIter give
for augmentation settings that draw no random number that matters.  gpunda writes the
.rec files (MXNet's venv has no OpenCV for pack_img), MXNet reads them:

    PYTHONPATH=. /work/main/.venv/bin/python tests/data/make_image_aug_fixture.py write
    /work/mxvenv/bin/python tests/data/make_image_aug_fixture.py read
"""
import os
import sys

import numpy as np

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "io_iter")
REC = os.path.join(OUT, "aug.rec")
DET_REC = os.path.join(OUT, "aug_det.rec")
BASE = dict(batch_size=3, label_width=1, preprocess_threads=1)
CASES = {
    "rotate": dict(data_shape=(3, 12, 10), rotate=30, fill_value=0),
    "rotate_list": dict(data_shape=(3, 12, 10), rotate_list="90", fill_value=7),
    "scale": dict(data_shape=(3, 12, 10), min_random_scale=0.75, max_random_scale=0.75),
    "aspect": dict(data_shape=(3, 12, 10), min_aspect_ratio=1.5, max_aspect_ratio=1.5,
                   inter_method=2),
    "img_size": dict(data_shape=(3, 12, 10), max_img_size=14, min_img_size=13, inter_method=3),
    "pad": dict(data_shape=(3, 20, 20), pad=3, fill_value=50),
    "crop_size": dict(data_shape=(3, 8, 8), min_crop_size=11, max_crop_size=11),
    "auto_inter": dict(data_shape=(3, 12, 10), resize=14, rotate=10, inter_method=9),
    "gray_rotate": dict(data_shape=(1, 12, 10), rotate=45, max_img_size=16, fill_value=255),
}
# random settings: compared by statistics over STAT_EPOCHS epochs of one iterator
STAT_EPOCHS = 40
STAT_CASES = {
    "jitter": dict(brightness=0.3, contrast=0.3, saturation=0.3),
    "hls": dict(random_h=20, random_s=30, random_l=30),
    "pca": dict(pca_noise=2.0),
    "affine": dict(max_rotate_angle=30, max_shear_ratio=0.2, min_random_scale=0.7,
                   max_random_scale=1.3, max_aspect_ratio=0.2),
    "contrast_illum": dict(max_random_contrast=0.3, max_random_illumination=20,
                           cls="ImageRecordIter"),
}
DET_STAT_CASES = {
    "pad": dict(rand_pad_prob=0.7, max_pad_scale=2.5, fill_value=0),
    "crop": dict(rand_crop_prob=0.9, min_crop_scales=0.3, max_crop_scales=0.9,
                 min_crop_aspect_ratios=0.5, max_crop_aspect_ratios=2.0, min_crop_overlaps=0.2),
    "crop_overlap": dict(rand_crop_prob=1.0, min_crop_scales=0.2, max_crop_scales=0.6,
                         crop_emit_mode="overlap", emit_overlap_thresh=0.5),
    "colour": dict(random_hue_prob=0.5, max_random_hue=30, random_saturation_prob=0.5,
                   max_random_saturation=40, random_illumination_prob=0.5,
                   max_random_illumination=30, random_contrast_prob=0.5,
                   max_random_contrast=0.4),
}
DET_BASE = dict(batch_size=3, label_pad_width=24, preprocess_threads=1)
DET_CASES = {
    "mirror": dict(data_shape=(3, 12, 10), rand_mirror_prob=1.0),
    "shrink": dict(data_shape=(3, 12, 12), resize_mode="shrink"),
    "fit": dict(data_shape=(3, 30, 30), resize_mode="fit", inter_method=1),
    "resize_auto": dict(data_shape=(3, 10, 10), resize=12, inter_method=9),
}


def images():
    rng = np.random.RandomState(3)
    out = []
    for i in range(3):
        rows, cols = 18 + 2 * i, 22 - 3 * i
        y, x = np.mgrid[:rows, :cols]
        smooth = np.stack([x * 255 // cols, y * 255 // rows, (x + y) * 127 // (rows + cols)], -1)
        out.append(np.clip(smooth + rng.randint(-20, 21, (rows, cols, 3)), 0, 255)
                   .astype(np.uint8))
    return out


def det_label(i):
    objs = [[0, 0.1, 0.2, 0.5, 0.6], [1, 0.4 + 0.1 * i, 0.3, 0.9, 0.95],
            [2, 0.5, 0.5, 0.5, 0.7]]                  # the last has no area: dropped
    return [2, 5] + [v for o in objs[:2 + (i == 1)] for v in o]


def epoch_statistics(mx, key):
    """Per image of aug.rec, over the epochs: the spread (std) of its mean pixel value and
    the mean of its pixel values' std, averaged over the images: shape (2,)."""
    kw = dict(BASE, data_shape=(3, 12, 10), seed=5)
    kw.update(STAT_CASES[key])
    it = getattr(mx.io, kw.pop("cls", "ImageRecordUInt8Iter"))(path_imgrec=REC, **kw)
    per_epoch = []
    for _ in range(STAT_EPOCHS):
        it.reset()
        d = it.next().data[0].asnumpy().astype(np.float64)
        per_epoch.append([d.mean(axis=(1, 2, 3)), d.std(axis=(1, 2, 3))])
    v = np.array(per_epoch)                  # (epochs, 2, images)
    return np.array([v[:, 0].std(axis=0).mean(), v[:, 1].mean()])


def det_epoch_statistics(mx, key):
    """Over STAT_EPOCHS epochs of aug_det.rec: the mean number of boxes kept, their mean
    width, and (per image, averaged) the std of the mean pixel value: shape (3,)."""
    kw = dict(DET_BASE, data_shape=(3, 12, 10), seed=5)
    kw.update(DET_STAT_CASES[key])
    it = mx.io.ImageDetRecordIter(path_imgrec=DET_REC, **kw)
    counts, widths, means = [], [], []
    for _ in range(STAT_EPOCHS):
        it.reset()
        batch = it.next()
        for lab in batch.label[0].asnumpy():
            objs = lab[6:4 + int(lab[3])].reshape(-1, 5)
            counts.append(len(objs))
            widths.extend(objs[:, 3] - objs[:, 1])
        means.append(batch.data[0].asnumpy().astype(np.float64).mean(axis=(1, 2, 3)))
    return np.array([np.mean(counts), np.mean(widths), np.std(means, axis=0).mean()])


def write():
    import gpunda as mx
    w = mx.recordio.MXRecordIO(REC, "w")
    d = mx.recordio.MXRecordIO(DET_REC, "w")
    for i, img in enumerate(images()):
        w.write(mx.recordio.pack_img((0, float(i), i, 0), img, quality=3, img_fmt=".png"))
        d.write(mx.recordio.pack_img((0, np.array(det_label(i), np.float32), i, 0), img,
                                     quality=3, img_fmt=".png"))
    w.close()
    d.close()


def read():
    import mxnet as mx
    out = {}
    for key, kw in CASES.items():
        it = mx.io.ImageRecordIter(path_imgrec=REC, **BASE, **kw)
        batch = it.next()
        out[f"{key}_data"] = batch.data[0].asnumpy()
        out[f"{key}_label"] = batch.label[0].asnumpy()
    for key, kw in DET_CASES.items():
        it = mx.io.ImageDetRecordIter(path_imgrec=DET_REC, **DET_BASE, **kw)
        batch = it.next()
        out[f"det_{key}_data"] = batch.data[0].asnumpy()
        out[f"det_{key}_label"] = batch.label[0].asnumpy()
    for key in STAT_CASES:
        out[f"stat_{key}"] = epoch_statistics(mx, key)
    for key in DET_STAT_CASES:
        out[f"det_stat_{key}"] = det_epoch_statistics(mx, key)
    np.savez_compressed(os.path.join(OUT, "image_aug_mxnet191.npz"), **out)


if __name__ == "__main__":
    {"write": write, "read": read}[sys.argv[1]]()
