"""Per-thread scopes: AttrScope.current / NameManager.current as MXNet's class properties."""
import threading

import gpunda as mx
from gpunda.attribute import AttrScope
from gpunda.name import NameManager


def _run(fn):
    t = threading.Thread(target=fn)
    t.start()
    t.join()


def test_attrscope_current_is_assignable_per_thread():
    old = AttrScope.current
    try:
        AttrScope.current = AttrScope(y="hi")
        seen = []
        _run(lambda: seen.append(dict(AttrScope.current._attr)))
        assert seen == [{}] and AttrScope.current._attr == {"y": "hi"}
        with AttrScope(x="1"):
            assert AttrScope.current._attr == {"y": "hi", "x": "1"}
        assert AttrScope.current._attr == {"y": "hi"}
    finally:
        AttrScope.current = old


def test_name_manager_current_per_thread():
    old = NameManager.current
    try:
        NameManager.current = NameManager()
        NameManager.current.get(None, "main")
        seen = []
        _run(lambda: seen.append("main" in NameManager.current._counter))
        assert seen == [False] and "main" in NameManager.current._counter
    finally:
        NameManager.current = old


def test_layers_build_in_a_thread():
    out = []

    def f():
        net = mx.gluon.nn.Dense(2)
        net.initialize()
        out.append(net(mx.nd.array([1, 2, 3])).shape)
    _run(f)
    assert out == [(3, 2)]
