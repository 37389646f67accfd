"""mx.profiler: per-op counts, chrome-trace output in MXNet's layout, zero hooks while off."""
import json

import numpy as np
import pytest

import gpunda as mx
from gpunda import profiler
from gpunda.ops.registry import get_op


@pytest.fixture(autouse=True)
def _isolate(tmp_path):
    yield
    # leave nothing behind: no events for the at-exit dump, no stats, default options
    profiler.set_state("stop")
    profiler.set_config(filename=str(tmp_path / "rest.json"))
    profiler.dump(True)
    profiler.dumps(reset=True)


@pytest.fixture
def prof(tmp_path):
    fname = str(tmp_path / "trace.json")
    profiler.set_config(profile_all=True, aggregate_stats=True, filename=fname)
    profiler.dumps(reset=True)
    yield fname


def _op_counts():
    return {k: v["Count"] for k, v in json.loads(profiler.dumps(format="json"))["Time"]
            .get("operator", {}).items()}


def test_counts_match_the_ops_run(prof):
    profiler.set_state("run")
    x = mx.nd.ones((10, 10))
    y = mx.nd.sqrt(x)          # unary fast path
    x = x + 1                   # scalar op
    x = x + 1
    z = x * y                   # binary fast path (NDArray operator)
    w = mx.nd.dot(z, z)         # general invoke
    mx.nd.waitall()
    profiler.set_state("stop")
    counts = _op_counts()
    assert counts["sqrt"] == 1
    assert counts["_plus_scalar"] == 2
    assert counts["broadcast_mul"] == 1
    assert counts["dot"] == 1
    np.testing.assert_allclose(w.asnumpy(), np.dot((2 + np.ones((10, 10))), (3 * np.ones((10, 10)))))


def test_symbolic_plan_steps_are_timed(prof):
    a = mx.sym.var("a")
    ex = (a * 2 + 1).bind(mx.cpu(), {"a": mx.nd.ones((3,), ctx=mx.cpu())})   # plan built before run
    profiler.set_state("run")
    ex.forward()
    ex.forward()
    profiler.set_state("stop")
    counts = _op_counts()
    assert counts["_mul_scalar"] == 2 and counts["_plus_scalar"] == 2
    assert ex.outputs[0].asnumpy().tolist() == [3.0, 3.0, 3.0]


def test_trace_file_has_begin_end_pairs(prof):
    profiler.set_state("run")
    y = mx.nd.ones((4, 4), ctx=mx.cpu()) * 3
    mx.nd.relu(y)
    profiler.set_state("stop")
    profiler.dump()
    with open(prof) as f:
        trace = json.load(f)
    assert trace["displayTimeUnit"] == "ms"
    ops = [e for e in trace["traceEvents"] if e.get("cat") == "operator"]
    names = [e["name"] for e in ops]
    assert "relu" in names and "_mul_scalar" in names
    for name in set(names):
        b = [e for e in ops if e["name"] == name and e["ph"] == "B"]
        e = [e for e in ops if e["name"] == name and e["ph"] == "E"]
        assert len(b) == len(e) >= 1
        assert all(x["ts"] <= y["ts"] for x, y in zip(b, e))
    meta = [e for e in trace["traceEvents"] if e["ph"] == "M"]
    assert {"name": "process_name", "ph": "M", "pid": ops[0]["pid"],
            "args": {"name": "cpu/0"}} in meta


def test_off_records_nothing_and_restores_computes(prof):
    op = get_op("sqrt")
    original = op.compute
    profiler.set_state("run")
    assert op.compute is not original
    profiler.set_state("stop")
    assert op.compute is original
    # the operator closures are pointed back too: their cell holds the original again
    f = mx.nd.NDArray.__mul__
    cell = f.__closure__[f.__code__.co_freevars.index("compute")].cell_contents
    assert cell is get_op("broadcast_mul").compute
    mx.nd.sqrt(mx.nd.ones((2,)))
    assert _op_counts() == {}


def test_pause_resume(prof):
    profiler.set_state("run")
    profiler.pause()
    mx.nd.sqrt(mx.nd.ones((2,)))
    profiler.resume()
    mx.nd.exp(mx.nd.ones((2,)))
    profiler.set_state("stop")
    counts = _op_counts()
    assert "sqrt" not in counts and counts["exp"] == 1


def test_dumps_sorting_and_reset(prof):
    profiler.set_state("run")
    for _ in range(3):
        mx.nd.exp(mx.nd.ones((2,)))
    mx.nd.sqrt(mx.nd.ones((2,)))
    profiler.set_state("stop")
    for key, field in (("count", "Count"), ("total", "Total"), ("avg", "Avg"), ("min", "Min"),
                       ("max", "Max")):
        for asc in (False, True):
            d = json.loads(profiler.dumps(format="json", sort_by=key, ascending=asc))
            vals = [v[field] for v in d["Time"]["operator"].values()]
            assert vals == sorted(vals, reverse=not asc)
    d = json.loads(profiler.dumps(format="json"))
    assert set(d) == {"Time", "Memory", "Unit"} and d["Unit"] == {"Time": "ms", "Memory": "kB"}
    table = profiler.dumps(reset=True)
    assert "operator" in table and "exp" in table and "Total Count" in table
    assert _op_counts() == {}


def test_aggregate_off_gives_empty_dumps(tmp_path):
    profiler.set_config(filename=str(tmp_path / "t.json"))
    profiler.set_state("run")
    mx.nd.exp(mx.nd.ones((2,)))
    profiler.set_state("stop")
    assert profiler.dumps() == ""


def test_domain_objects_in_trace(prof):
    profiler.set_state("run")
    dom = profiler.Domain("Dom")
    task = dom.new_task("mytask")
    task.start()
    task.stop()
    frame = profiler.Frame(dom, "myframe")
    frame.start()
    frame.stop()
    with profiler.Event("myevent"):
        pass
    ctr = dom.new_counter("ctr", 3)
    ctr += 2
    ctr.decrement(1)
    dom.new_marker("mark").mark("process")
    with profiler.scope("fwd"):
        mx.nd.exp(mx.nd.ones((2,)))
    profiler.set_state("stop")
    profiler.dump()
    with open(prof) as f:
        ev = json.load(f)["traceEvents"]
    kinds = {(e["name"], e["ph"]) for e in ev}
    assert {("mytask", "b"), ("mytask", "e"), ("myframe", "("), ("myframe", ")"),
            ("myevent", "B"), ("myevent", "E"), ("mark", "n"), ("fwd", "B")} <= kinds
    assert [e["args"]["ctr"] for e in ev if e["name"] == "ctr"] == [3, 5, 4]
    assert json.loads(profiler.dumps(format="json"))["Time"]["Dom"]["mytask"]["Count"] == 1


def test_bad_config_and_state():
    with pytest.raises(mx.MXNetError, match="Cannot find argument 'foo'"):
        profiler.set_config(foo=1)
    with pytest.raises(KeyError):
        profiler.set_state("bad")
    with pytest.raises(mx.MXNetError, match="format"):
        profiler.dumps(format="xml")


def test_dump_not_finished_keeps_events(prof):
    import os
    profiler.set_state("run")
    mx.nd.exp(mx.nd.ones((2,)))
    profiler.dump(False)
    s1 = os.path.getsize(prof)
    mx.nd.exp(mx.nd.ones((2,)))
    profiler.dump(False)
    assert os.path.getsize(prof) > s1
    profiler.dump(True)
    profiler.set_state("stop")


def test_memory_counters_follow_allocations(prof):
    profiler.set_state("run")
    a = mx.nd.ones((10, 10), ctx=mx.cpu())   # 400 bytes (MXNet's _ones op)
    b = a * a                                # +400
    c = b + 1                                # +400
    del b                                    # -400 once freed
    d = mx.nd.dot(a, c)                      # +400
    v = d.reshape((100,))                    # a view: nothing new
    profiler.set_state("stop")
    profiler.dump()
    with open(prof) as f:
        ev = json.load(f)["traceEvents"]
    used = [e["args"]["Memory: cpu/0"] for e in ev if e["name"] == "Memory: cpu/0"]
    assert used == [400, 800, 1200, 800, 1200]      # MXNet 1.9.1's counters, same calls
    mem = json.loads(profiler.dumps(format="json"))["Memory"]["Device Storage"]["Memory: cpu/0"]
    # Count/Min/Max as MXNet 1.9.1; Avg is gpunda's mean of the samples (MXNet prints 0.4)
    assert mem == {"Count": 5, "Min": 0.4, "Max": 1.2, "Avg": 0.88}
    del v


class _Sigmoid(mx.operator.CustomOp):
    def forward(self, is_train, req, in_data, out_data, aux):
        x = in_data[0].asnumpy()
        self.assign(out_data[0], req[0], mx.nd.array(1.0 / (1.0 + np.exp(-x))))
        mx.nd.zeros(shape=(100, 100))           # an op called from the Python

    def backward(self, req, out_grad, in_data, out_data, in_grad, aux):
        y = out_data[0].asnumpy()
        self.assign(in_grad[0], req[0], mx.nd.array(out_grad[0].asnumpy() * (1.0 - y) * y))


@mx.operator.register("_prof_test_sigmoid")
class _SigmoidProp(mx.operator.CustomOpProp):
    def __init__(self):
        super().__init__(True)

    def create_operator(self, ctx, in_shapes, in_dtypes):
        return _Sigmoid()


def test_custom_operator_profiling_names_as_mxnet(prof):
    """MXNet 1.9.1 files a Custom op's Python under 'Custom Operator' as
    '<op_type>::pure_python' and '_backward_<op_type>::pure_python', and the ops that
    Python calls as '<op_type>::<op>'; 'Custom' itself is not an 'operator' entry, and
    nd.zeros/ones/full are the ops _zeros/_ones/_full (recorded with /work/mxref)."""
    profiler.set_state("run")
    profiler.dumps(reset=True)
    x = mx.nd.array([0, 1, 2, 3])
    x.attach_grad()
    with mx.autograd.record():
        y = mx.nd.Custom(x, op_type="_prof_test_sigmoid")
    y.backward()
    mx.nd.ones((2,))
    mx.nd.full((2,), 3.0)
    mx.nd.waitall()
    stats = json.loads(profiler.dumps(format="json"))["Time"]
    profiler.set_state("stop")
    custom = stats["Custom Operator"]
    for name in ("_prof_test_sigmoid::pure_python", "_backward__prof_test_sigmoid::pure_python",
                 "_prof_test_sigmoid::_zeros"):
        assert custom[name]["Count"] == 1, name
    assert "Custom" not in stats["operator"]
    assert stats["operator"]["_ones"]["Count"] == 1
    assert stats["operator"]["_full"]["Count"] == 1
    np.testing.assert_allclose(x.grad.asnumpy(), [0.25, 0.19661193, 0.10499359, 0.04517666],
                               rtol=1e-5)
