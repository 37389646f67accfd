"""mx.registry factories and the small mx.log / mx.library modules."""
import logging

import pytest

import gpunda as mx


class _Base:
    pass


def test_register_alias_create():
    register = mx.registry.get_register_func(_Base, "widget")
    alias = mx.registry.get_alias_func(_Base, "widget")
    create = mx.registry.get_create_func(_Base, "widget")

    @alias("gizmo")
    @register
    class Knob(_Base):
        def __init__(self, size=1):
            self.size = size
    assert create("KNOB").size == 1 and create("gizmo", size=4).size == 4
    assert create('["knob", {"size": 2}]').size == 2
    assert create('{"widget": "knob", "size": 3}').size == 3
    assert create({"widget": "knob", "size": 5}).size == 5
    k = Knob()
    assert create(k) is k
    assert set(mx.registry.get_registry(_Base)) == {"knob", "gizmo"}
    with pytest.raises(mx.MXNetError, match="unknown widget 'nope'"):
        create("nope")
    with pytest.raises(mx.MXNetError, match="already an instance"):
        create(k, 1)
    with pytest.raises(AssertionError, match="not a subclass of _Base"):
        register(int)


def test_log_lines_are_glog_style(tmp_path):
    f = tmp_path / "log.txt"
    lg = mx.log.get_logger("gpunda-test-log", filename=str(f), level=mx.log.INFO)
    lg.info("hello there")
    lg.debug("not shown")
    for h in lg.handlers:
        h.flush()
    line = f.read_text().strip()
    assert line.startswith("I") and line.endswith("] hello there") and "test_registry.py" in line
    assert mx.log.get_logger("gpunda-test-log") is lg and len(lg.handlers) == 1
    assert mx.log.INFO == logging.INFO


def test_library_load_is_not_supported(tmp_path):
    with pytest.raises(mx.MXNetError, match="does NOT exist"):
        mx.library.load(str(tmp_path / "missing.so"))
    so = tmp_path / "ops.so"
    so.write_bytes(b"")
    with pytest.raises(mx.base.NotImplementedForGpunda, match="is not supported: gpunda is pure"):
        mx.library.load(str(so))


def test_params_with_number_lists_are_cached_without_holding_the_list():
    # the multi-tensor optimizers pass lrs=[...] on every step: parsed once per distinct
    # value, into tuples, so changing the caller's list afterwards changes nothing cached
    from gpunda.ops.registry import get_op
    op = get_op("_multi_adamw_update")
    lrs = [0.5, 0.25]
    a = op.parse_params(dict(num_weights=2, lrs=lrs, wds=[0.0, 0.1], etas=[1.0, 1.0]))
    assert a.lrs == (0.5, 0.25) and a.wds == (0.0, 0.1)
    assert op.parse_params(dict(num_weights=2, lrs=[0.5, 0.25], wds=[0.0, 0.1],
                                etas=[1.0, 1.0])) is a
    lrs[0] = 0.125
    b = op.parse_params(dict(num_weights=2, lrs=lrs, wds=[0.0, 0.1], etas=[1.0, 1.0]))
    assert b.lrs == (0.125, 0.25) and a.lrs == (0.5, 0.25)
    # a list given to a parameter kept as given ('any') is parsed every time
    custom = get_op("Custom")
    assert custom._list_key({"op_type": "x", "v": [1]}) is None
