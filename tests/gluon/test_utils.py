"""gluon.utils helpers: HookHandle, replace_file, shape_is_known, is_np_array/is_np_shape."""
import pickle
from collections import OrderedDict

import pytest

import gpunda as mx
from gpunda.gluon import utils


def test_hook_handle_attach_detach_and_context_manager():
    hooks = OrderedDict()     # weakly referenced, as a block's hook dicts
    h = utils.HookHandle()
    f = lambda *a: None  # noqa: E731
    h.attach(hooks, f)
    assert list(hooks.values()) == [f]
    with pytest.raises(AssertionError):
        h.attach(hooks, f)
    h.detach()
    assert not hooks
    h.detach()                       # detaching twice is harmless
    h2 = utils.HookHandle()
    with h2:
        h2.attach(hooks, f)
        assert len(hooks) == 1
    assert not hooks
    restored = pickle.loads(pickle.dumps(utils.HookHandle()))
    restored.detach()


def test_block_hooks_use_hook_handle():
    net = mx.gluon.nn.Dense(2, in_units=2)
    net.initialize()
    calls = []
    h = net.register_forward_hook(lambda b, i, o: calls.append(1))
    assert isinstance(h, utils.HookHandle)
    net(mx.nd.ones((1, 2)))
    h.detach()
    net(mx.nd.ones((1, 2)))
    assert calls == [1]


def test_replace_file(tmp_path):
    src, dst = tmp_path / "a", tmp_path / "b"
    src.write_text("new")
    dst.write_text("old")
    utils.replace_file(str(src), str(dst))
    assert dst.read_text() == "new" and not src.exists()
    src.write_text("x")
    with pytest.raises(OSError, match="replace_file"):
        utils.replace_file(str(src), str(tmp_path / "missing" / "c"))
    assert not src.exists()          # the temporary source is removed on failure


def test_shape_is_known_follows_np_shape():
    assert not utils.shape_is_known(None)
    assert utils.shape_is_known((2, 3))
    assert not utils.shape_is_known((2, 0))
    assert not utils.shape_is_known(())
    with mx.util.np_shape(True):
        assert utils.is_np_shape()
        assert utils.shape_is_known(())
        assert utils.shape_is_known((2, 0))
        assert not utils.shape_is_known((2, -1))
        with pytest.raises(AssertionError):
            utils.shape_is_known((2, -2))
    assert utils.is_np_array() is False


def test_tensor_types():
    assert mx.gluon.tensor_types == (mx.sym.Symbol, mx.nd.NDArray)
    assert isinstance(mx.nd.ones(1), mx.gluon.tensor_types)
