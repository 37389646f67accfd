"""The demo's pieces (the full run is too long for the test suite; see bench/bench_mlp.py)."""
import io

import numpy as np
import pytest

import gpunda as mx
from gpunda import nd
from gpunda._tools import demo
from gpunda.base import GpundaError


def test_shipped_digits_split_is_fixed_and_disjoint():
    x_tr, y_tr, x_te, y_te = demo.load_digits(seed=0)
    assert x_tr.shape == (1438, 1, 8, 8) and x_te.shape == (359, 1, 8, 8)
    assert x_tr.dtype == np.float32 and 0.0 <= x_tr.min() and x_tr.max() == 1.0
    assert sorted(np.unique(np.concatenate([y_tr, y_te]))) == list(range(10))
    again = demo.load_digits(seed=0)
    np.testing.assert_array_equal(again[3], y_te)
    # no test image is also a training image (by index: the split is a permutation)
    with np.load(demo._DATA) as f:
        assert f["images"].shape == (1797, 8, 8) and f["images"].dtype == np.uint8
        assert np.bincount(f["labels"]).tolist()[:3] == [178, 182, 177]


def test_demo_model_forward_shape_and_names():
    net = demo.build_model()
    net.initialize(ctx=mx.cpu())
    y = net(nd.zeros((3, 1, 8, 8), ctx=mx.cpu()))
    assert y.shape == (3, 10)
    names = list(net.collect_params())
    assert names[0] == "digits_conv0_weight" and names[-1] == "digits_dense0_bias"


def test_demo_rejects_bad_flags():
    with pytest.raises(GpundaError, match="unknown type 'dist_snyc'"):
        demo.main(["--kvstore", "dist_snyc", "--device", "cpu"])
    with pytest.raises(GpundaError, match="--device"):
        demo.main(["--device", "tpu"])


class _Stream(io.StringIO):
    def __init__(self, tty):
        super().__init__()
        self._tty = tty

    def isatty(self):
        return self._tty


def test_progress_off_a_terminal_is_plain_periodic_lines():
    t = [0.0]
    out = _Stream(tty=False)
    p = demo._Progress(epochs=2, total=100, stream=out, interval=10.0, clock=lambda: t[0])
    for done in range(1, 101):
        t[0] = done * 0.5           # 0.5 s per batch: a line every 20 batches
        p.update(1, done)
    text = out.getvalue()
    assert "\r" not in text
    assert text.splitlines() == [f"epoch 1/2: batch {b}/100" for b in (21, 41, 61, 81)]


def test_progress_on_a_terminal_redraws_one_bar():
    out = _Stream(tty=True)
    p = demo._Progress(epochs=1, total=4, stream=out, width=8)
    for done in range(1, 5):
        p.update(1, done)
    text = out.getvalue()
    assert "\n" not in text and text.count("\r") >= 4
    assert "\repoch 1/1 [####....] 2/4" in text and text.endswith("\r")


def test_demo_that_misses_its_target_says_why(capsys):
    # lr 0 cannot learn: the accuracy stays near chance, far below the target
    rc = demo.main(["--epochs", "1", "--lr", "0", "--bench-steps", "0", "--device", "cpu"])
    out, err = capsys.readouterr()
    assert rc == 1
    assert "MISSED the 97% target" in out
    assert "demo: exit status 1 because the final test accuracy 0." in err
    assert "is below the 97% target (after --epochs 1, --lr 0.0," in err
    assert "\r" not in err          # captured stderr is not a terminal: no bar
