"""Property tests for broadcast_to / broadcast_like / broadcast_axis and Reshape's
special codes, against references written here from the documented rules."""
import numpy as np
import pytest
from hypothesis import given, settings, HealthCheck
from hypothesis import strategies as st

import gpunda as mx
from gpunda import autograd
from gpunda.base import GpundaError

nd = mx.nd
SETTINGS = settings(max_examples=30, deadline=None, database=None,
                    suppress_health_check=[HealthCheck.too_slow])

dims = st.integers(1, 4)
shapes = st.lists(dims, min_size=1, max_size=4).map(tuple)


def broadcast_ref(x, out_shape):
    """Element i of the result reads x at i, with size-1 axes pinned to 0."""
    out = np.empty(out_shape, x.dtype)
    for idx in np.ndindex(*out_shape):
        out[idx] = x[tuple(0 if d == 1 else i for i, d in zip(idx, x.shape))]
    return out


@st.composite
def broadcast_case(draw):
    """(input shape, target spec with 0 = keep, expected output shape)."""
    in_shape = draw(st.lists(st.sampled_from([1, 2, 3]), min_size=1, max_size=4))
    spec, out = [], []
    for d in in_shape:
        kind = draw(st.sampled_from(["keep0", "same", "grow"]))
        if kind == "keep0":
            spec.append(0)
            out.append(d)
        elif kind == "same" or d != 1:
            spec.append(d)
            out.append(d)
        else:
            n = draw(st.integers(1, 4))
            spec.append(n)
            out.append(n)
    return tuple(in_shape), tuple(spec), tuple(out)


@SETTINGS
@given(broadcast_case(), st.sampled_from([np.float32, np.float64]))
def test_broadcast_to_matches_reference(case, dtype):
    in_shape, spec, out_shape = case
    x = np.random.default_rng(0).standard_normal(in_shape).astype(dtype)
    y = nd.broadcast_to(nd.array(x, dtype=dtype), shape=spec)
    assert y.shape == out_shape
    np.testing.assert_array_equal(y.asnumpy(), broadcast_ref(x, out_shape))


@SETTINGS
@given(broadcast_case())
def test_broadcast_to_gradient_sums_copies(case):
    in_shape, spec, out_shape = case
    rng = np.random.default_rng(1)
    x0 = rng.standard_normal(in_shape)
    head = rng.standard_normal(out_shape)
    x = nd.array(x0, dtype=np.float64)
    x.attach_grad()
    with autograd.record():
        y = nd.broadcast_to(x, shape=spec)
    y.backward(nd.array(head, dtype=np.float64))
    want = np.zeros(in_shape)
    for idx in np.ndindex(*out_shape):
        want[tuple(0 if d == 1 else i for i, d in zip(idx, in_shape))] += head[idx]
    np.testing.assert_allclose(x.grad.asnumpy(), want, rtol=1e-12, atol=1e-12)


@SETTINGS
@given(shapes, shapes)
def test_broadcast_to_refuses_or_matches(in_shape, target):
    x = np.arange(int(np.prod(in_shape)), dtype=np.float32).reshape(in_shape)
    ok = len(in_shape) == len(target) and all(
        t == 0 or d == t or d == 1 for d, t in zip(in_shape, target))
    if not ok:
        with pytest.raises(GpundaError, match="broadcast_to"):
            nd.broadcast_to(nd.array(x), shape=target)
        return
    out = tuple(d if t == 0 else t for d, t in zip(in_shape, target))
    np.testing.assert_array_equal(nd.broadcast_to(nd.array(x), shape=target).asnumpy(),
                                  broadcast_ref(x, out))


@SETTINGS
@given(broadcast_case())
def test_broadcast_like_matches_reference(case):
    in_shape, _, out_shape = case
    x = np.random.default_rng(2).standard_normal(in_shape)
    like = nd.zeros(out_shape)
    y = nd.broadcast_like(nd.array(x, dtype=np.float64), like)
    np.testing.assert_array_equal(y.asnumpy(), broadcast_ref(x, out_shape))


@SETTINGS
@given(st.data())
def test_broadcast_like_axes(data):
    lhs = data.draw(st.lists(st.sampled_from([1, 2]), min_size=1, max_size=3).map(tuple))
    rhs = data.draw(st.lists(dims, min_size=1, max_size=3).map(tuple))
    ones = [k for k, d in enumerate(lhs) if d == 1]
    if not ones:
        return
    la = data.draw(st.lists(st.sampled_from(ones), min_size=1, max_size=len(ones), unique=True))
    ra = data.draw(st.lists(st.integers(0, len(rhs) - 1), min_size=len(la), max_size=len(la)))
    # negative axes count from the end, as in MXNet
    la_given = tuple(a - len(lhs) if data.draw(st.booleans()) else a for a in la)
    out = list(lhs)
    for a, b in zip(la, ra):
        out[a] = rhs[b]
    x = np.random.default_rng(3).standard_normal(lhs)
    y = nd.broadcast_like(nd.array(x), nd.zeros(rhs), lhs_axes=la_given, rhs_axes=tuple(ra))
    np.testing.assert_allclose(y.asnumpy(), broadcast_ref(x.astype(np.float32), tuple(out)))


@SETTINGS
@given(st.data())
def test_broadcast_axis(data):
    shape = data.draw(st.lists(st.sampled_from([1, 2, 3]), min_size=1, max_size=4).map(tuple))
    ones = [k for k, d in enumerate(shape) if d == 1]
    axes = data.draw(st.lists(st.sampled_from(ones), unique=True, max_size=len(ones))) \
        if ones else []
    sizes = data.draw(st.lists(st.integers(1, 3), min_size=len(axes), max_size=len(axes)))
    out = list(shape)
    for a, s in zip(axes, sizes):
        out[a] = s
    x = np.random.default_rng(4).standard_normal(shape).astype(np.float32)
    y = nd.broadcast_axis(nd.array(x), axis=tuple(axes), size=tuple(sizes))
    np.testing.assert_array_equal(y.asnumpy(), broadcast_ref(x, tuple(out)))


# ---------------------------------------------------------------------------
# Reshape special codes


@st.composite
def reshape_spec(draw, src):
    """A shape spec for input dims ``src`` built token by token, with the expected output.

    Each token consumes input dims left to right, exactly as the codes are documented.
    """
    tokens, expect = [], []
    j, used_infer = 0, False
    while j < len(src):
        left = len(src) - j
        choices = ["copy", "explicit", "split", "rest"] + (["merge"] if left >= 2 else []) \
            + ([] if used_infer else ["infer"])
        kind = draw(st.sampled_from(choices))
        d = src[j]
        if kind == "copy":
            tokens.append((0,))
            expect.append(d)
            j += 1
        elif kind == "explicit":
            tokens.append((d,))
            expect.append(d)
            j += 1
        elif kind == "infer":
            tokens.append((-1,))
            expect.append(d)
            used_infer = True
            j += 1
        elif kind == "merge":
            tokens.append((-3,))
            expect.append(d * src[j + 1])
            j += 2
        elif kind == "split":
            a = draw(st.sampled_from([k for k in range(1, d + 1) if d % k == 0]))
            b = d // a
            form = draw(st.sampled_from(["both", "left-1", "right-1"]))
            tokens.append((-4, -1 if form == "left-1" else a, -1 if form == "right-1" else b))
            expect += [a, b]
            j += 1
        else:
            tokens.append((-2,))
            expect += list(src[j:])
            j = len(src)
    # trailing unit dims and empty -2s are legal once the input is used up
    for _ in range(draw(st.integers(0, 2))):
        if draw(st.booleans()):
            tokens.append((1,))
            expect.append(1)
        else:
            tokens.append((-2,))
    return tokens, tuple(expect)


@SETTINGS
@given(st.data())
def test_reshape_codes_constructed(data):
    src = data.draw(shapes)
    tokens, expect = data.draw(reshape_spec(src))
    spec = tuple(v for t in tokens for v in t)
    x = np.arange(int(np.prod(src)), dtype=np.float32).reshape(src)
    y = nd.Reshape(nd.array(x), shape=spec)
    assert y.shape == expect, (src, spec)
    np.testing.assert_array_equal(y.asnumpy(), x.reshape(expect))


@SETTINGS
@given(st.data())
def test_reshape_codes_reverse_constructed(data):
    src = data.draw(shapes)
    tokens, expect_rev = data.draw(reshape_spec(tuple(reversed(src))))
    # MXNet flips the raw spec (a -4 then reads the two values before it), so the spec
    # written for reverse=True is the forward spec of the mirrored input, value by value
    spec = tuple(reversed([v for t in tokens for v in t]))
    expect = tuple(reversed(expect_rev))
    x = np.arange(int(np.prod(src)), dtype=np.float32).reshape(src)
    y = nd.Reshape(nd.array(x), shape=spec, reverse=True)
    assert y.shape == expect, (src, spec)
    np.testing.assert_array_equal(y.asnumpy(), x.reshape(expect))


def ref_reshape(src, spec):
    """Output shape per the documented codes, or None when they do not fit (recursive)."""
    total = int(np.prod(src))

    def walk(s, codes):
        if not codes:
            return []
        c, rest = codes[0], codes[1:]
        if c > 0:
            tail = walk(s[1:], rest)
            return None if tail is None else [c] + tail
        if c == 0:
            if not s:
                return None
            tail = walk(s[1:], rest)
            return None if tail is None else [s[0]] + tail
        if c == -1:
            tail = walk(s[1:], rest)
            return None if tail is None or "?" in tail else ["?"] + tail
        if c == -2:
            tail = walk([], rest)
            return None if tail is None else list(s) + tail
        if c == -3:
            if len(s) < 2:
                return None
            tail = walk(s[2:], rest)
            return None if tail is None else [s[0] * s[1]] + tail
        if c == -4:
            if len(rest) < 2 or not s:
                return None
            a, b = rest[0], rest[1]
            if a in (0,) or b in (0,) or a < -1 or b < -1 or (a == -1 and b == -1):
                return None
            a = s[0] // b if a == -1 else a
            b = s[0] // a if b == -1 else b
            if a * b != s[0]:
                return None
            tail = walk(s[1:], rest[2:])
            return None if tail is None else [a, b] + tail
        return None

    out = walk(list(src), list(spec))
    if out is None:
        return None
    if "?" in out:
        known = int(np.prod([v for v in out if v != "?"]))
        if known == 0 or total % known:
            return None
        out = [total // known if v == "?" else v for v in out]
    return tuple(out) if int(np.prod(out)) == total else None


@SETTINGS
@given(shapes, st.lists(st.integers(-4, 6), min_size=1, max_size=5))
def test_reshape_random_codes_fit_or_raise(src, spec):
    want = ref_reshape(src, spec)
    x = nd.zeros(src)
    if want is None:
        with pytest.raises(GpundaError) as ei:
            nd.reshape(x, shape=tuple(spec))
        msg = str(ei.value)
        assert "Reshape" in msg and str(tuple(spec)) in msg and str(tuple(src)) in msg
    else:
        assert nd.reshape(x, shape=tuple(spec)).shape == want
