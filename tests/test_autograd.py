"""Autograd: recording state, variables, backward/grad semantics, safety, Function.

Expected gradients come from closed-form NumPy derivatives.
"""
import threading

import numpy as np
import pytest

import gpunda as mx
from gpunda import autograd as ag
from gpunda._engine import autograd as engine_autograd
from gpunda.base import GpundaError

nd = mx.nd


def _var(a, grad_req="write"):
    x = nd.array(np.asarray(a, dtype=np.float64), dtype="float64")
    x.attach_grad(grad_req)
    return x


# ---------------------------------------------------------------------------
# state


def test_initial_state_and_setters_return_previous():
    assert not ag.is_recording() and not ag.is_training()
    assert ag.set_recording(True) is False
    assert ag.is_recording()
    assert ag.set_recording(False) is True
    assert ag.set_training(1) is False
    assert ag.is_training() is True
    assert ag.set_training(False) is True
    # MXNet's keyword names
    assert ag.set_recording(is_recording=True) is False
    assert ag.set_recording(is_recording=False) is True
    assert ag.set_training(train_mode=True) is False
    assert ag.set_training(train_mode=False) is True


def test_record_and_pause_scopes():
    with ag.record():
        assert ag.is_recording() and ag.is_training()
        with ag.pause():
            assert not ag.is_recording() and not ag.is_training()
        with ag.pause(train_mode=True):
            assert not ag.is_recording() and ag.is_training()
        assert ag.is_recording() and ag.is_training()
    assert not ag.is_recording() and not ag.is_training()
    with ag.record(train_mode=False):
        assert ag.is_recording() and not ag.is_training()


def test_train_and_predict_mode_leave_recording_alone():
    with ag.train_mode():
        assert ag.is_training() and not ag.is_recording()
        with ag.record(train_mode=True):
            with ag.predict_mode():
                assert ag.is_recording() and not ag.is_training()
            assert ag.is_training()
    assert not ag.is_training()


def test_scopes_restore_state_on_exception():
    ag.set_training(True)
    with pytest.raises(ValueError):
        with ag.record(train_mode=False):
            with ag.pause():
                raise ValueError("boom")
    assert not ag.is_recording() and ag.is_training()


def test_scope_object_reentrant():
    scope = ag.record()
    with scope:
        with ag.pause():
            with scope:
                assert ag.is_recording()
            assert not ag.is_recording()
        assert ag.is_recording()
    assert not ag.is_recording()


def test_state_is_thread_local():
    seen = {}
    go = threading.Event()

    def worker():
        seen["start"] = (ag.is_recording(), ag.is_training())
        ag.set_recording(True)
        ag.set_training(True)
        go.set()

    with ag.record():
        t = threading.Thread(target=worker)
        t.start()
        t.join()
        assert ag.is_recording() and ag.is_training()
    assert seen["start"] == (False, False)
    assert go.is_set() and not ag.is_recording() and not ag.is_training()


# ---------------------------------------------------------------------------
# variables


def test_attach_grad_allocates_zeros_and_grad_none_before():
    x = nd.array(np.ones((2, 3), np.float32))
    assert x.grad is None
    x.attach_grad()
    assert x.grad.shape == (2, 3) and x.grad.dtype == np.float32
    assert np.all(x.grad.asnumpy() == 0)


def test_mark_variables_lists_and_reqs(rng):
    a, b = nd.array(rng.random(3)), nd.array(rng.random(3))
    ga, gb = nd.zeros((3,)), nd.ones((3,))
    ag.mark_variables([a, b], [ga, gb], ["write", "add"])
    with ag.record():
        y = a * b
    y.backward()
    np.testing.assert_allclose(ga.asnumpy(), b.asnumpy(), rtol=1e-6)
    np.testing.assert_allclose(gb.asnumpy(), 1 + a.asnumpy(), rtol=1e-6)
    assert a.grad is ga and b.grad is gb


def test_mark_variables_single_array():
    x = nd.array([1.0, 2.0])
    g = nd.zeros((2,))
    ag.mark_variables(x, g, "write")
    with ag.record():
        y = x * x
    y.backward()
    np.testing.assert_allclose(g.asnumpy(), [2.0, 4.0])


def test_grad_req_null_leaves_no_grad():
    # MXNet 1.9.1: x.attach_grad(grad_req='null'); x.grad -> [0. 0.] (a zero buffer);
    # after a backward without retain_graph through x, x.grad -> None (AGInfo::Clear)
    x = _var([1.0, 2.0], "null")
    w = _var([3.0, 4.0])
    np.testing.assert_array_equal(x.grad.asnumpy(), [0.0, 0.0])
    with ag.record():
        y = x * w
    y.backward()
    assert x.grad is None
    np.testing.assert_allclose(w.grad.asnumpy(), [1.0, 2.0])


def test_grad_req_null_buffer_survives_a_retained_backward():
    # MXNet 1.9.1: the zero buffer stays while the graph is retained, and a 'null'
    # variable that the freeing backward never reached keeps it too
    x, u = _var([1.0, 2.0], "null"), _var([7.0], "null")
    w = _var([3.0, 4.0])
    with ag.record():
        y = x * w
    y.backward(retain_graph=True)
    np.testing.assert_array_equal(x.grad.asnumpy(), [0.0, 0.0])
    y.backward()
    assert x.grad is None
    np.testing.assert_array_equal(u.grad.asnumpy(), [0.0])
    with ag.record():
        y = x * w
    with pytest.raises(GpundaError, match="not marked for gradients"):
        ag.grad(y, [x])             # MXNet: "does not require gradient"


@pytest.mark.parametrize("retain", [False, True])
def test_backward_with_only_null_variables_raises(retain):
    # MXNet 1.9.1:
    #   x = nd.array([1., 2., 3.]); x.attach_grad(grad_req='null')
    #   with autograd.record(): y = nd.tanh(x)
    #   y.backward()  -> MXNetError: There are no inputs in computation graph that
    #                    require gradients.  (x.grad stays [0. 0. 0.]; a second try raises too)
    x = _var([1.0, 2.0, 3.0], "null")
    with ag.record():
        y = nd.tanh(x)
    for _ in range(2):
        with pytest.raises(GpundaError, match="no inputs in the computation graph"):
            y.backward(retain_graph=retain)
        np.testing.assert_array_equal(x.grad.asnumpy(), [0.0, 0.0, 0.0])
    with pytest.raises(GpundaError, match="no inputs in the computation graph"):
        x.backward()
    # the graph is intact: a variable that requires gradients can still get them through it
    np.testing.assert_allclose(ag.grad(y, [x])[0].asnumpy(), 1 - np.tanh([1.0, 2.0, 3.0]) ** 2,
                               rtol=1e-6)


def test_mark_variables_null_keeps_the_given_buffer_untouched():
    # MXNet 1.9.1: autograd.mark_variables([a], [g], grad_reqs='null'); a.grad -> g ([5. 5.]),
    # backward of a*2 raises MXNetError and g stays [5. 5.]
    a, g = nd.array([1.0, 2.0]), nd.array([5.0, 5.0])
    ag.mark_variables([a], [g], grad_reqs="null")
    assert a.grad is g
    with ag.record():
        z = a * 2
    with pytest.raises(GpundaError, match="require gradients"):
        z.backward()
    np.testing.assert_array_equal(g.asnumpy(), [5.0, 5.0])


def test_np_null_variable_has_a_zero_np_buffer():
    x = mx.np.array([1.0, 2.0])
    x.attach_grad(grad_req="null")
    assert isinstance(x.grad, mx.np.ndarray)
    np.testing.assert_array_equal(x.grad.asnumpy(), [0.0, 0.0])


def test_detach_cuts_the_graph():
    x = _var([1.0, 2.0, 3.0])
    with ag.record():
        y = x * x
        z = y.detach() * x      # d/dx = y (y treated as a constant)
    assert y.detach()._ag is None
    z.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [1.0, 4.0, 9.0])


@pytest.mark.parametrize("name", ["stop_gradient", "BlockGrad"])
def test_stop_gradient(name):
    x = _var([1.0, 2.0, 3.0])
    f = getattr(nd, name)
    with ag.record():
        s = f(x * x)
        y = x * x + s * x       # s is a constant: d/dx = 2x + s
    np.testing.assert_allclose(s.asnumpy(), [1.0, 4.0, 9.0])
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [2 + 1.0, 4 + 4.0, 6 + 9.0])


def test_stop_gradient_alone_gives_zero_grad():
    x = _var([1.0, 2.0])
    x.grad[:] = 7
    with ag.record():
        y = nd.stop_gradient(x)
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [0.0, 0.0])


# ---------------------------------------------------------------------------
# backward


def test_backward_chain_matches_closed_form(rng):
    xv = rng.uniform(-1, 1, 5)
    x = _var(xv)
    with ag.record():
        y = nd.tanh(x * x) + nd.exp(x) / 2
    y.backward()
    t = np.tanh(xv * xv)
    np.testing.assert_allclose(x.grad.asnumpy(), (1 - t * t) * 2 * xv + np.exp(xv) / 2,
                               rtol=1e-12)


def test_backward_shared_subexpression_accumulates(rng):
    xv = rng.uniform(-1, 1, 4)
    x = _var(xv)
    with ag.record():
        y = x * x
        z = y + y * y + nd.sin(y)
    z.backward()
    np.testing.assert_allclose(x.grad.asnumpy(),
                               2 * xv + 4 * xv ** 3 + np.cos(xv * xv) * 2 * xv, rtol=1e-12)


def test_backward_several_heads_and_head_grads(rng):
    xv = rng.uniform(-1, 1, 3)
    x = _var(xv)
    with ag.record():
        y1 = x * 3
        y2 = x * x
    ag.backward([y1, y2])
    np.testing.assert_allclose(x.grad.asnumpy(), 3 + 2 * xv)
    hv = np.array([1.0, -2.0, 0.5])
    with ag.record():
        y1 = x * 3
        y2 = x * x
    ag.backward([y1, y2], [nd.array(hv, dtype="float64"), None])
    np.testing.assert_allclose(x.grad.asnumpy(), 3 * hv + 2 * xv)


def test_ndarray_backward_with_out_grad(rng):
    xv = rng.uniform(-1, 1, 3)
    x = _var(xv)
    with ag.record():
        y = nd.sin(x)
    y.backward(nd.array([1.0, 2.0, 3.0], dtype="float64"))
    np.testing.assert_allclose(x.grad.asnumpy(), np.cos(xv) * [1, 2, 3])


def test_broadcast_gradients_sum_over_broadcast_axes(rng):
    av, bv = rng.uniform(0.5, 1.5, (2, 3)), rng.uniform(0.5, 1.5, (1, 3))
    a, b = _var(av), _var(bv)
    with ag.record():
        y = a * b + a / b - b
    y.backward()
    np.testing.assert_allclose(a.grad.asnumpy(), np.broadcast_to(bv + 1 / bv, (2, 3)))
    np.testing.assert_allclose(b.grad.asnumpy(),
                               (av - av / bv ** 2 - 1).sum(axis=0, keepdims=True))


def test_second_backward_raises_without_retain_graph():
    x = _var([1.0, 2.0])
    with ag.record():
        y = x * x
    y.backward()
    with pytest.raises(GpundaError, match="retain_graph"):
        y.backward()


def test_backward_through_freed_interior_raises():
    x = _var([1.0, 2.0])
    with ag.record():
        y = nd.exp(x)
        z = y * 2
    z.backward()
    with ag.record():
        w = y * 3
    with pytest.raises(GpundaError, match="freed"):
        w.backward()


def test_freed_output_is_a_constant_in_a_new_graph():
    # as in MXNet: after a freeing backward, y enters the next graph as a constant
    x = _var([1.0, 2.0])
    with ag.record():
        y = nd.exp(x)
    y.backward()
    with ag.record():
        w = y * x
    w.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), np.exp([1.0, 2.0]), rtol=1e-6)


def test_retain_graph_allows_second_backward_write_and_add():
    x = _var([1.0, 2.0])
    with ag.record():
        y = x * x
    y.backward(retain_graph=True)
    y.backward(retain_graph=True)
    np.testing.assert_allclose(x.grad.asnumpy(), [2.0, 4.0])     # write overwrites
    x2 = _var([1.0, 2.0], "add")
    with ag.record():
        y2 = x2 * x2
    y2.backward(retain_graph=True)
    y2.backward()
    np.testing.assert_allclose(x2.grad.asnumpy(), [4.0, 8.0])    # add accumulates


def test_add_accumulates_across_recordings():
    x = _var([1.0, 2.0], "add")
    for k in range(3):
        with ag.record():
            y = x * (k + 1)
        y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [6.0, 6.0])


def test_write_overwrites_previous_grad():
    x = _var([1.0, 2.0])
    with ag.record():
        y = x * 5
    y.backward()
    with ag.record():
        y = x * 2
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [2.0, 2.0])


def test_backward_of_a_variable_itself():
    x = _var([1.0, 2.0])
    x.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [1.0, 1.0])


def test_rules_see_training_mode_of_forward():
    seen = []

    class Probe(ag.Function):
        def forward(self, x):
            return x * 1

        def backward(self, dy):
            seen.append(ag.is_training())
            return dy

    for mode in (True, False):
        x = _var([1.0])
        with ag.record(train_mode=mode):
            y = Probe()(x)
        y.backward(train_mode=not mode)
    assert seen == [True, False]


def test_float32_gradients_stay_float32():
    x = nd.array([0.5, 1.5])
    x.attach_grad()
    with ag.record():
        y = nd.tanh(x) * 2
    y.backward()
    assert x.grad.dtype == np.float32
    t = np.tanh(np.float32([0.5, 1.5]))
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * (1 - t * t), rtol=1e-6)


# ---------------------------------------------------------------------------
# grad()


def test_grad_returns_without_touching_dot_grad(rng):
    xv = rng.uniform(-1, 1, 3)
    x = _var(xv)
    with ag.record():
        y = nd.sin(x) * x
    res = ag.grad(y, x)
    # MXNet's grad returns a list even for a single variable
    assert isinstance(res, list) and len(res) == 1
    g = res[0]
    assert isinstance(g, nd.NDArray)
    np.testing.assert_allclose(g.asnumpy(), np.cos(xv) * xv + np.sin(xv))
    np.testing.assert_array_equal(x.grad.asnumpy(), np.zeros(3))


def test_grad_list_of_variables_and_unused_branch(rng):
    av, bv = rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 3)
    a, b = _var(av), _var(bv)
    with ag.record():
        y = a * b + nd.stop_gradient(b)
    ga, gb = ag.grad([y], [a, b])
    np.testing.assert_allclose(ga.asnumpy(), bv)
    np.testing.assert_allclose(gb.asnumpy(), av)


def test_grad_frees_graph_unless_retained():
    x = _var([1.0, 2.0])
    with ag.record():
        y = x * x
    ag.grad(y, x, retain_graph=True)
    ag.grad(y, x)
    with pytest.raises(GpundaError, match="freed"):
        ag.grad(y, x)


def test_grad_result_does_not_alias_head_grad():
    x = _var([1.0, 2.0])
    hg = nd.array([3.0, 4.0], dtype="float64")
    with ag.record():
        y = x + 1
    (g,) = ag.grad(y, x, head_grads=hg)
    g[:] = 0
    np.testing.assert_array_equal(hg.asnumpy(), [3.0, 4.0])


# ---------------------------------------------------------------------------
# safety


def test_mutating_saved_input_makes_backward_raise():
    x = _var([1.0, 2.0])
    w = nd.array([3.0, 4.0], dtype="float64")
    with ag.record():
        y = x * w
    w[:] = 0
    with pytest.raises(GpundaError, match="broadcast_mul.*modified in place"):
        y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [0.0, 0.0])


def test_mutating_saved_output_makes_backward_raise():
    x = _var([1.0, 2.0])
    with ag.record():
        y = nd.exp(x)
        z = y * 2
    y[:] = 0
    with pytest.raises(GpundaError, match="exp.*output 0"):
        z.backward()


def test_mutating_through_a_view_is_seen():
    x = _var([1.0, 2.0])
    w = nd.array([[3.0, 4.0], [5.0, 6.0]], dtype="float64")
    with ag.record():
        y = x * w
    v = w[1]
    v[:] = 9
    with pytest.raises(GpundaError, match="modified in place"):
        y.backward()


def test_optimizer_update_between_record_and_backward_is_seen():
    # sgd_update writes the weight in place through a mutating op, not __setitem__
    x = _var([1.0, 2.0])
    w = nd.array([3.0, 4.0], dtype="float64")
    with ag.record():
        y = x * w
    nd.sgd_update(w, nd.ones((2,), dtype="float64"), lr=0.5, out=w)
    with pytest.raises(GpundaError, match="broadcast_mul.*modified in place"):
        y.backward()


def test_write_after_record_of_one_graph_does_not_disturb_another():
    # an in-place write to an array that a node did not keep leaves that node alone
    x = _var([1.0, 2.0])
    other = nd.array([5.0, 6.0], dtype="float64")
    with ag.record():
        y = nd.tanh(x) * x
    other[:] = 0
    y.backward()
    t = np.tanh([1.0, 2.0])
    np.testing.assert_allclose(x.grad.asnumpy(), (1 - t * t) * [1.0, 2.0] + t)


def test_equal_shape_add_keeps_no_input_alive():
    import gc
    import weakref
    x = _var([1.0, 2.0])
    with ag.record():
        a = x * 3
        b = nd.exp(x)
        y = a + b          # broadcast_add of equal shapes: its rule needs no input
        z = y * 2
    refs = weakref.ref(a), weakref.ref(b)
    del a
    gc.collect()
    assert refs[0]() is None      # a lives in no node (b is kept by exp for its rule)
    z.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * (3 + np.exp([1.0, 2.0])))


@pytest.mark.parametrize("op", ["broadcast_add", "broadcast_sub"])
def test_broadcast_add_sub_gradients_reduce(op, rng):
    a = _var(rng.uniform(-1, 1, (3, 4)))
    b = _var(rng.uniform(-1, 1, (1, 4)))
    hg = rng.uniform(-1, 1, (3, 4))
    with ag.record():
        y = getattr(nd, op)(a, b)
    y.backward(nd.array(hg, dtype="float64"))
    sign = 1 if op == "broadcast_add" else -1
    np.testing.assert_allclose(a.grad.asnumpy(), hg)
    np.testing.assert_allclose(b.grad.asnumpy(), sign * hg.sum(axis=0, keepdims=True))


def test_grad_gives_each_variable_its_own_buffer():
    x, y = _var([1.0, 2.0]), _var([3.0, 4.0])
    with ag.record():
        z = (x + y) * 2     # the add passes one gradient array to both inputs
    gx, gy = ag.grad(z, [x, y])
    gx[:] = 7
    np.testing.assert_array_equal(gy.asnumpy(), [2.0, 2.0])


_IN_GRAPH = "already in a computational graph"


@pytest.mark.parametrize("write", ["iadd", "setitem", "setitem_part", "out", "copyto"])
def test_write_into_recorded_array_inside_record_raises(write):
    # MXNet's RecordOp refuses any recorded write whose output is already in the graph
    x = _var([1.0, 2.0])
    with ag.record():
        y = x * 2
        z = y * y
        with pytest.raises(GpundaError, match=_IN_GRAPH):
            if write == "iadd":
                y += 1
            elif write == "setitem":
                y[:] = 5
            elif write == "setitem_part":
                y[0] = 5
            elif write == "out":
                nd.tanh(x, out=y)
            else:
                nd.ones((2,), dtype="float64").copyto(y)
    np.testing.assert_array_equal(y.asnumpy(), [2.0, 4.0])     # nothing was written
    z.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), 8 * np.array([1.0, 2.0]))


def test_write_after_the_graph_was_freed_is_allowed():
    x = _var([1.0, 2.0])
    with ag.record():
        y = x * 2
        y.backward(retain_graph=True)
        with pytest.raises(GpundaError, match=_IN_GRAPH):
            y[:] = 5          # a retained graph still holds y
        y.backward()
        y[:] = 5              # freed by the second backward
    np.testing.assert_array_equal(y.asnumpy(), [5.0, 5.0])


def test_write_into_arrays_outside_the_graph_is_allowed():
    x = _var([1.0, 2.0])
    c = nd.array([1.0, 1.0], dtype="float64")
    with ag.record():
        k = c * 3          # depends on no variable: not recorded
        k[:] = 7
        k += 1
        y = x * k
    y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [8.0, 8.0])
    with ag.record():
        y = x * 2
    y[:] = 0               # outside record() the write is allowed
    np.testing.assert_array_equal(y.asnumpy(), [0.0, 0.0])


def test_inplace_op_on_plain_array_with_recorded_operand_raises():
    # x += y records an op whose output is its own input: MXNet refuses it
    x = _var([1.0, 2.0])
    acc = nd.zeros((2,), dtype="float64")
    with ag.record():
        y = x * 2
        with pytest.raises(GpundaError, match="Inplace operations"):
            acc += y
        with pytest.raises(GpundaError, match="Inplace operations"):
            acc[0:1] = y[0:1]
    np.testing.assert_array_equal(acc.asnumpy(), [0.0, 0.0])


@pytest.mark.parametrize("how", ["setitem", "copyto", "broadcast", "newaxis", "full_slice"])
def test_whole_array_assignment_of_recorded_value_joins_the_graph(how):
    # MXNet: z[:] = y and y.copyto(z) are recorded copies (values checked against MXNet 1.9.1)
    x = _var([1.0, 2.0])
    z = nd.zeros((2, 2) if how == "broadcast" else (2,), dtype="float64")
    with ag.record():
        y = x * 2
        if how == "copyto":
            y.copyto(z)
        elif how == "newaxis":
            z[None] = y.reshape((1, 2))     # a[None] = v assigns all of a, as a[...] = v
        elif how == "full_slice":
            z[0:2] = y
        else:
            z[:] = y
        w = z * 3
    w.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [12.0, 12.0] if how == "broadcast"
                                  else [6.0, 6.0])


def test_state_an_op_mutates_may_change_before_backward():
    from gpunda.ops.registry import all_names
    if "BatchNorm" not in all_names():
        pytest.skip("BatchNorm not registered")
    rng = np.random.default_rng(2)
    x = _var(rng.uniform(0, 1, (2, 3, 2)))
    gamma, beta = nd.ones((3,), dtype="float64"), nd.zeros((3,), dtype="float64")
    mm, mv = nd.zeros((3,), dtype="float64"), nd.ones((3,), dtype="float64")
    with ag.record():
        y1 = nd.BatchNorm(x, gamma, beta, mm, mv, fix_gamma=False)
        y2 = nd.BatchNorm(x * 2, gamma, beta, mm, mv, fix_gamma=False)   # updates mm, mv again
        z = y1 * y2
    z.backward()     # moving stats are state, not values the gradient reads
    assert np.all(np.isfinite(x.grad.asnumpy()))


def test_out_into_variable_while_recording_raises():
    x = _var([1.0, 2.0])
    before = x.asnumpy()
    with ag.record():
        with pytest.raises(GpundaError, match=_IN_GRAPH):
            nd.tanh(x * 1, out=x)
        with pytest.raises(GpundaError, match=_IN_GRAPH):
            x += 1
        with pytest.raises(GpundaError, match=_IN_GRAPH):
            x[:] = 1
    np.testing.assert_array_equal(x.asnumpy(), before)
    x += 1        # outside record() it is allowed
    np.testing.assert_array_equal(x.asnumpy(), before + 1)


def test_out_into_plain_array_is_recorded():
    xv = np.array([0.1, 0.7])
    x = _var(xv)
    z = nd.zeros((2,), dtype="float64")
    with ag.record():
        nd.tanh(x, out=z)
        w = z * 2
    w.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * (1 - np.tanh(xv) ** 2))


# ---------------------------------------------------------------------------
# autograd.Function


class _Sigmoid(ag.Function):
    def forward(self, x):
        y = 1 / (1 + nd.exp(-x))
        self.save_for_backward(y)
        return y

    def backward(self, dy):
        y, = self.saved_tensors
        return dy * y * (1 - y)


def test_function_forward_backward(rng):
    xv = rng.uniform(-2, 2, 4)
    x = _var(xv)
    with ag.record():
        y = _Sigmoid()(x) * 3
    y.backward()
    s = 1 / (1 + np.exp(-xv))
    np.testing.assert_allclose(x.grad.asnumpy(), 3 * s * (1 - s), rtol=1e-12)


def test_function_records_one_node_and_works_with_grad(rng):
    xv = rng.uniform(-2, 2, 4)
    x = _var(xv)
    with ag.record():
        y = _Sigmoid()(nd.sin(x))
    assert y._ag[0].op.name == "_CustomFunction"
    (g,) = ag.grad(y, x)
    s = 1 / (1 + np.exp(-np.sin(xv)))
    np.testing.assert_allclose(g.asnumpy(), s * (1 - s) * np.cos(xv), rtol=1e-12)


def test_function_two_inputs_two_outputs(rng):
    class MulAdd(ag.Function):
        def forward(self, a, b):
            self.save_for_backward(a, b)
            return a * b, a + b

        def backward(self, d_prod, d_sum):
            a, b = self.saved_tensors
            return d_prod * b + d_sum, d_prod * a + d_sum

    av, bv = rng.uniform(-1, 1, 3), rng.uniform(-1, 1, 3)
    a, b = _var(av), _var(bv)
    with ag.record():
        p, s = MulAdd()(a, b)
        y = p * 2
    y.backward()     # the sum output gets no gradient: zeros are passed for it
    np.testing.assert_allclose(a.grad.asnumpy(), 2 * bv)
    np.testing.assert_allclose(b.grad.asnumpy(), 2 * av)
    with ag.record():
        p, s = MulAdd()(a, b)
    ag.backward([p, s])
    np.testing.assert_allclose(a.grad.asnumpy(), bv + 1)


def test_function_outside_record_is_plain_call():
    x = nd.array([0.0])
    y = _Sigmoid()(x)
    assert y._ag is None
    np.testing.assert_allclose(y.asnumpy(), [0.5])


def test_function_returning_its_input():
    class Ident(ag.Function):
        def forward(self, x):
            return x

        def backward(self, dy):
            return dy * 2

    x = _var([1.0, 2.0])
    with ag.record():
        y = Ident()(x)
    assert y is not x and x._ag[0].is_leaf
    y.backward()
    np.testing.assert_allclose(x.grad.asnumpy(), [2.0, 2.0])


def test_function_instance_called_twice_raises():
    f = _Sigmoid()
    f(nd.array([1.0]))
    with pytest.raises(GpundaError, match="only once"):
        f(nd.array([1.0]))


@pytest.mark.parametrize("bad", ["count", "shape", "type"])
def test_function_bad_backward_results_raise(bad):
    class Bad(ag.Function):
        def forward(self, x):
            return x * 2

        def backward(self, dy):
            if bad == "count":
                return dy, dy
            if bad == "shape":
                return nd.ones((5,), dtype="float64")
            return 3.0

    x = _var([1.0, 2.0])
    with ag.record():
        y = Bad()(x)
    with pytest.raises(GpundaError, match="Bad"):
        y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [0.0, 0.0])


def test_function_once_differentiable(rng):
    xv = rng.uniform(-1, 1, 3)
    x = _var(xv)
    with ag.record():
        y = _Sigmoid()(x)
        (g,) = ag.grad(y, x, create_graph=True)     # first order works and is recorded
    s = 1 / (1 + np.exp(-xv))
    np.testing.assert_allclose(g.asnumpy(), s * (1 - s), rtol=1e-12)
    with pytest.raises(GpundaError, match="once-differentiable"):
        g.backward()


# ---------------------------------------------------------------------------
# bad input


def test_backward_on_integer_heads_as_mxnet():
    # MXNet 1.9.1 differentiates integer arrays too: d(2x)/dx = 2 in int32
    x = nd.array([1, 2], dtype="int32")
    x.attach_grad()
    with ag.record():
        y = x * 2
    y.backward()
    assert x.grad.dtype == np.int32
    np.testing.assert_array_equal(x.grad.asnumpy(), [2, 2])
    f = _var([1.0, 2.0, 3.0])
    with ag.record():
        z = nd.cast(f * 2, dtype="int32")
    z.backward()
    np.testing.assert_array_equal(f.grad.asnumpy(), [2.0, 2.0, 2.0])


def test_backward_on_unrecorded_head_raises():
    x = _var([1.0])
    y = x * 2       # not recorded
    with pytest.raises(GpundaError, match="not recorded"):
        y.backward()
    with ag.record():
        c = nd.array([1.0]) * 2     # recorded scope, but no variable involved
    with pytest.raises(GpundaError, match="not connected"):
        ag.backward([c])


def test_head_grads_wrong_shape_context_count_raise():
    x = _var([1.0, 2.0])
    with ag.record():
        y = x * 2
    with pytest.raises(GpundaError, match=r"head_grads\[0\] has shape"):
        y.backward(nd.ones((1,), dtype="float64"))
    with pytest.raises(GpundaError, match=r"cpu\(1\)"):
        y.backward(nd.ones((2,), ctx=mx.cpu(1), dtype="float64"))
    with pytest.raises(GpundaError, match="2 head_grads for 1 heads"):
        ag.backward([y], [None, None])
    with pytest.raises(GpundaError, match=r"head_grads\[0\] has dtype float32 but heads\[0\] "
                                          r"has dtype float64"):
        y.backward(nd.ones((2,), dtype="float32"))
    with pytest.raises(GpundaError, match="must be an NDArray"):
        ag.backward([y], [np.ones(2)])
    y.backward()      # the failed calls did not free the graph
    np.testing.assert_allclose(x.grad.asnumpy(), [2.0, 2.0])


def test_head_grads_of_another_shape_with_as_many_elements_are_read_in_the_heads_shape():
    # MXNet 1.9.1 reads the head gradient buffer in the head's shape: (3, 1) for (3,) works
    x = _var([1.0, 2.0, 3.0])
    hg = nd.array([[1.0], [2.0], [3.0]], dtype="float64")
    with ag.record():
        y = x * 2
    (g,) = ag.grad(y, [x], head_grads=hg, retain_graph=True)
    np.testing.assert_array_equal(g.asnumpy(), [2.0, 4.0, 6.0])
    y.backward(hg)
    np.testing.assert_array_equal(x.grad.asnumpy(), [2.0, 4.0, 6.0])
    assert hg.shape == (3, 1)


def test_grad_of_variable_not_in_graph_raises():
    x, z = _var([1.0]), _var([2.0])
    with ag.record():
        y = x * 2
    with pytest.raises(GpundaError, match=r"variables\[1\].*not part of the graph"):
        ag.grad(y, [x, z])
    with pytest.raises(GpundaError, match="not marked"):
        ag.grad(y, [nd.array([1.0])])


def test_unknown_grad_req_raises():
    x = nd.array([1.0])
    with pytest.raises(GpundaError, match="'sometimes'"):
        x.attach_grad("sometimes")
    with pytest.raises(GpundaError, match="grad_reqs"):
        ag.mark_variables([x], [nd.zeros((1,))], ["wirte"])
    assert x.grad is None


def test_mark_variables_length_mismatch_marks_nothing():
    a, b = nd.array([1.0]), nd.array([2.0])
    with pytest.raises(GpundaError, match="2 variables but 1 gradients"):
        ag.mark_variables([a, b], [nd.zeros((1,))])
    with pytest.raises(GpundaError, match="2 variables but 3 grad_reqs"):
        ag.mark_variables([a, b], [nd.zeros((1,)), nd.zeros((1,))], ["write"] * 3)
    with pytest.raises(GpundaError, match=r"gradients\[1\] has shape"):
        ag.mark_variables([a, b], [nd.zeros((1,)), nd.zeros((2,))])
    assert a.grad is None and b.grad is None


def test_failed_backward_leaves_grads_untouched():
    x = _var([1.0, 2.0])
    x.grad[:] = 5
    w = nd.array([1.0, 1.0], dtype="float64")
    with ag.record():
        y = x * w + nd.exp(x)
    w += 1
    with pytest.raises(GpundaError):
        y.backward()
    np.testing.assert_array_equal(x.grad.asnumpy(), [5.0, 5.0])


def test_tape_is_freed_without_the_cycle_collector():
    import gc
    import weakref
    gc.disable()
    try:
        x = _var([0.5, 1.5])
        with ag.record():
            y = nd.tanh(x * 2)
            z = _Sigmoid()(y)
        refs = [weakref.ref(y._ag[0]), weakref.ref(z._ag[0])]
        del y, z
        assert all(r() is None for r in refs)
    finally:
        gc.enable()


@pytest.mark.parametrize("req", ["write", "add"])
def test_sparse_gradient_buffer(req):
    xv = np.arange(6.0).reshape(3, 2)
    x = nd.array(xv, dtype="float64")
    try:
        x.attach_grad(req, stype="row_sparse")
    except Exception as e:     # sparse storage is built by another part
        pytest.skip(f"row_sparse gradients not available: {e}")
    assert x.grad.stype == "row_sparse"
    for _ in range(2):
        with ag.record():
            y = x * x
        y.backward()
    expect = 2 * xv * (2 if req == "add" else 1)
    np.testing.assert_allclose(x.grad.tostype("default").asnumpy(), expect)


def test_get_symbol_when_available():
    try:
        from gpunda.symbol.trace import symbol_from_tape  # noqa: F401
    except Exception as e:     # the Symbol package is built by another part
        pytest.skip(f"gpunda.symbol.trace not available: {e}")
    x = _var([1.0, 2.0])
    with ag.record():
        y = nd.tanh(x * 2)
    s = ag.get_symbol(y)
    assert "tanh" in s.tojson()


@pytest.mark.gpu
def test_backward_and_grad_on_gpu_match_cpu():
    rng = np.random.default_rng(9)
    xv = rng.uniform(0.5, 1.5, (2, 3))
    res = {}
    for ctx in (mx.cpu(0), mx.gpu(0)):
        x = nd.array(xv, ctx=ctx, dtype="float64")
        x.attach_grad()
        with ag.record():
            y = nd.tanh(x * x) / x
        (g,) = ag.grad(y, x, create_graph=True)
        g.backward()
        res[ctx.device_type] = (g.asnumpy(), x.grad.asnumpy())
    np.testing.assert_allclose(res["gpu"][0], res["cpu"][0], rtol=1e-10)
    np.testing.assert_allclose(res["gpu"][1], res["cpu"][1], rtol=1e-10)


# ---------------------------------------------------------------------------
# MXNet's API surface: names, _fresh_grad, storage types of gradients


def test_star_import_brings_the_names_mxnet_code_expects():
    # MXNet's autograd has no __all__: `from mxnet.autograd import *` brings NDArray too
    ns = {}
    exec("from gpunda.autograd import *", ns)
    assert ns["NDArray"] is nd.NDArray
    assert ns["Symbol"] is mx.sym.Symbol
    for name in ("record", "pause", "backward", "grad", "mark_variables", "Function",
                 "get_symbol", "is_training", "set_training", "check_call", "c_array",
                 "string_types", "MXCallbackList"):
        assert name in ns, name
    assert ns["string_types"] == (str,)


def test_parse_head_normalises_as_mxnet():
    a, b = nd.ones((2,)), nd.ones((3,))
    assert engine_autograd._parse_head(a, None) == ([a], None)
    heads, hgs = engine_autograd._parse_head([a, b], [None, b])
    assert heads == [a, b] and hgs == [None, b]
    with pytest.raises(GpundaError, match="same length"):
        engine_autograd._parse_head([a, b], [a])


def test_fresh_grad_is_set_by_backward_only():
    x, y = _var([1.0, 2.0]), _var([3.0, 4.0])
    assert x._fresh_grad is False
    with ag.record():
        z = x * 2
    ag.grad(z, [x])                 # grad() leaves .grad alone, so nothing is fresh
    assert x._fresh_grad is False
    with ag.record():
        z = x * y
    z.backward()
    assert x._fresh_grad is True and y._fresh_grad is True
    x._fresh_grad = False
    assert x._fresh_grad is False and y._fresh_grad is True
    with ag.record():
        w = x.detach() * y          # x is cut off: its gradient is not refreshed
    w.backward()
    assert x._fresh_grad is False and y._fresh_grad is True
    plain = nd.ones((2,))
    assert plain._fresh_grad is False
    with pytest.raises(GpundaError, match="not marked as a variable"):
        plain._fresh_grad = True    # as MXNet: no gradient state to set
    x.attach_grad()
    assert x._fresh_grad is False   # a new variable starts stale


def test_null_variable_leaves_the_graph_with_a_freeing_backward():
    # MXNet clears a 'null' variable with the graph; 'write' variables stay marked
    x, z = _var([1.0, 2.0]), _var([3.0, 4.0], grad_req="null")
    with ag.record():
        with pytest.raises(GpundaError, match=_IN_GRAPH):
            z[:] = 0
        y = x * z
    y.backward(retain_graph=True)
    with ag.record():
        with pytest.raises(GpundaError, match=_IN_GRAPH):
            z[:] = 0                # a retained graph keeps it
    y.backward()
    with ag.record():
        z[:] = 5
        with pytest.raises(GpundaError, match=_IN_GRAPH):
            x[:] = 0
    assert z._fresh_grad is False and x._fresh_grad is True
    np.testing.assert_array_equal(z.asnumpy(), [5.0, 5.0])


@pytest.mark.parametrize("stype", ["csr", "row_sparse"])
def test_sparse_head_gradient_seeds_like_its_dense_values(rng, stype):
    xv = rng.uniform(-1, 1, (3, 4))
    hv = rng.uniform(-1, 1, (3, 4))
    hv[1] = 0
    x = _var(xv)
    with ag.record():
        y = x * x
    y.backward(nd.array(hv, dtype="float64").tostype(stype))
    np.testing.assert_allclose(x.grad.asnumpy(), 2 * xv * hv)


@pytest.mark.parametrize("array_stype", ["default", "csr", "row_sparse"])
@pytest.mark.parametrize("grad_stype", [None, "default", "csr", "row_sparse"])
def test_attach_grad_stype_defaults_to_the_arrays(array_stype, grad_stype):
    x = nd.zeros((2, 3), stype=array_stype)
    x.attach_grad(stype=grad_stype)
    assert x.grad.stype == (grad_stype or array_stype)
    assert x.detach().stype == array_stype


@pytest.mark.parametrize("stype", ["row_sparse", "csr"])
def test_gradient_into_sparse_buffer_given_to_mark_variables(rng, stype):
    xv, wv = rng.uniform(-1, 1, (3, 2)), rng.uniform(-1, 1, (3, 2))
    wv[0] = 0                       # a zero row stays out of the row_sparse gradient
    x = nd.array(xv, dtype="float64")
    g = nd.sparse.zeros(stype, (3, 2), dtype="float64")
    ag.mark_variables([x], [g])
    with ag.record():
        y = x * nd.array(wv, dtype="float64")
    y.backward()
    assert x.grad is g and g.stype == stype
    np.testing.assert_allclose(g.asnumpy(), wv)
    if stype == "row_sparse":
        assert sorted(g.indices.asnumpy().tolist()) == [1, 2]


def test_dot_gradient_of_row_sparse_weight_is_row_sparse(rng):
    lhs = rng.uniform(-1, 1, (2, 8))
    lhs[:, [1, 5]] = 0
    w = nd.ones((8, 3)).tostype("row_sparse")
    w.attach_grad()
    with ag.record():
        y = nd.dot(nd.array(lhs).tostype("csr"), w)
    y.backward()
    assert w.grad.stype == "row_sparse"
    np.testing.assert_allclose(w.grad.asnumpy(), lhs.T @ np.ones((2, 3)), rtol=1e-6)


def test_sparse_head_gradient_of_another_shape_is_densified_then_read_in_the_heads_shape():
    x = _var([1.0, 2.0, 3.0, 4.0])
    hg = nd.array([[1.0, 0.0], [0.0, 2.0]], dtype="float64").tostype("csr")
    with ag.record():
        y = x * 3
    y.backward(hg)
    np.testing.assert_array_equal(x.grad.asnumpy(), [3.0, 0.0, 0.0, 6.0])


def test_head_grad_larger_than_head_gives_its_leading_elements():
    # MXNet reads a head gradient's buffer as the head's shape (test_shape_array passes a
    # (7,) head gradient for a (1,) output)
    x = _var([1.0, 2.0])
    with ag.record():
        y = x * 3
    y.backward(nd.array([[5.0, 7.0], [9.0, 11.0]], dtype="float64"))
    np.testing.assert_array_equal(x.grad.asnumpy(), [15.0, 21.0])


def test_zero_size_head_grad_of_another_shape():
    x = nd.array(np.zeros((0, 0, 0, 0)), dtype="float64")
    x.attach_grad()
    with ag.record():
        y = x * 2
    y.backward(nd.array(np.ones((0, 0, 2)), dtype="float64"))
    assert x.grad.shape == (0, 0, 0, 0)
