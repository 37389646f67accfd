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


class _Response:
    def __init__(self, status, body):
        self.status_code, self._body = status, body

    def iter_content(self, chunk_size=1):
        for i in range(0, len(self._body), chunk_size):
            yield self._body[i:i + chunk_size]


def test_download_writes_checks_and_retries(tmp_path, monkeypatch):
    import hashlib
    import requests
    from gpunda.gluon.utils import download
    body = b"MOCK CONTENT" * 100
    calls = []

    def get(url, stream=True, verify=True):
        calls.append((url, verify))
        return _Response(200, body)
    monkeypatch.setattr(requests, "get", get)
    target = tmp_path / "sub" / "README.md"
    assert download("https://example.org/x/README.md", path=str(target)) == str(target)
    assert target.read_bytes() == body and list(target.parent.iterdir()) == [target]
    # a folder path takes the URL's file name; an existing file is not fetched again
    assert download("https://example.org/x/README.md", path=str(target.parent)) == str(target)
    assert len(calls) == 1
    sha = hashlib.sha1(body).hexdigest()
    download("https://example.org/x/README.md", path=str(target), sha1_hash=sha, overwrite=True)
    assert len(calls) == 2
    with pytest.warns(UserWarning, match="^Unverified HTTPS request"):
        download("https://example.org/x/other.md", path=str(tmp_path), verify_ssl=False)
    assert calls[-1] == ("https://example.org/x/other.md", False)
    # failures are retried, then raised; an HTTP error status is a failure
    failures = []

    def broken(url, stream=True, verify=True):
        failures.append(url)
        raise requests.exceptions.ConnectionError("no route")
    monkeypatch.setattr(requests, "get", broken)
    with pytest.raises(requests.exceptions.ConnectionError):
        download("http://doesnotexist.notfound/f", path=str(tmp_path / "f"), retries=3)
    assert len(failures) == 3
    monkeypatch.setattr(requests, "get", lambda *a, **k: _Response(404, b""))
    with pytest.raises(RuntimeError, match="HTTP 404"):
        download("https://example.org/missing", path=str(tmp_path / "m"), retries=1)
    assert not (tmp_path / "m").exists()


def test_clip_global_norm_warns_each_call_even_under_a_foreign_spec():
    """Importing gpunda.gluon.utils under another name (a test shim's ``mxnet.gluon.utils``)
    relabels its ``__spec__``; a relative import inside a function would then add an
    ImportWarning ("__package__ != __spec__.parent") to the warnings a caller records."""
    import importlib.util
    import warnings

    import numpy as np
    saved = utils.__spec__
    utils.__spec__ = importlib.util.spec_from_loader("otherpkg.gluon.utils", loader=None)
    try:
        x1 = mx.nd.ones((3, 3))
        x3 = mx.nd.array([1.0, 2.0, float("nan")])
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            assert utils.clip_global_norm([mx.nd.ones((2,))], 5.0) == pytest.approx(2 ** 0.5)
            utils.split_and_load(np.ones((4, 2), np.float32), [mx.cpu()])
            assert w == []
            for k in (1, 2):
                utils.clip_global_norm([x1, x3], 2.0)
                assert [x.category for x in w] == [UserWarning] * k
            utils.clip_global_norm([x1, x3], 2.0, check_isfinite=False)
            assert len(w) == 2
    finally:
        utils.__spec__ = saved


# -- private helpers MXNet 1.9.1's gluon.utils has; answers recorded from MXNet 1.9.1 --------
def test_brief_print_list_matches_mxnet():
    assert utils._brief_print_list(range(20)) == \
        "'0', '1', '2', ..., '16', '17', '18', '19'"
    assert utils._brief_print_list(["a", "b"]) == "'a', 'b'"
    assert utils._brief_print_list(range(8), limit=4) == "'0', '1', ..., '6', '7'"
    assert utils._brief_print_list([]) == ""


def test_indent_matches_mxnet():
    assert utils._indent("a\nb\n c", 3) == "a\n   b\n    c"
    assert utils._indent("one", 5) == "one"
    assert utils._indent("", 2) == ""


def test_check_same_symbol_type_returns_the_symbol_class():
    x = mx.sym.var("x")
    y = mx.sym.var("y").as_np_ndarray()
    assert utils._check_same_symbol_type([x, x]) is mx.sym.Symbol
    assert utils._check_same_symbol_type([y, y]) is mx.sym.np._Symbol
    for mixed in ([x, y], [y, x]):
        with pytest.raises(TypeError, match="Found both classic symbol"):
            utils._check_same_symbol_type(mixed)


def test_check_all_np_ndarrays_accepts_np_and_rejects_classic():
    y = mx.sym.var("y").as_np_ndarray()
    assert utils._check_all_np_ndarrays(mx.np.ones(2)) is None
    assert utils._check_all_np_ndarrays([mx.np.ones(2), (y, 3)]) is None
    assert utils._check_all_np_ndarrays(5) is None
    with pytest.raises(TypeError, match="got output type .*NDArray"):
        utils._check_all_np_ndarrays(mx.nd.ones(2))
    with pytest.raises(TypeError, match="got output type .*Symbol"):
        utils._check_all_np_ndarrays([mx.np.ones(1), [mx.sym.var("x")]])
