"""The vectorised KL threshold search behind _contrib_calibrate_entropy
(gpunda/ops/quantization/entropy.py) against a one-candidate-at-a-time transcription of
MXNet 1.9.1's CalibrateComputeCPU (src/operator/quantization/calibrate.cc): threshold
and divergence must be bit-for-bit equal, errors the same."""
import numpy as np
import pytest

from gpunda import nd
from gpunda.base import GpundaError
from gpunda.ops.quantization import entropy

_EPS = np.float32(0.0001)
_NON_POSITIVE = "non-positive entry"
_ALL_ZERO = "all zeros"


# -- the reference: gpunda's former loop, one candidate at a time (as MXNet's) ----------------------------------

def _seq(x):
    """float32 sum left to right (std::accumulate); cumsum is sequential."""
    return np.cumsum(x, dtype=np.float32)[-1] if x.size else np.float32(0)


def _smooth(p, eps=_EPS):
    zeros = p == 0
    n_zero = int(zeros.sum())
    n_nonzero = p.size - n_zero
    if not n_nonzero:
        return None
    eps1 = np.float32(eps * np.float32(n_zero) / np.float32(n_nonzero))
    if eps1 >= 1.0:
        return None
    return (p + np.where(zeros, eps, -eps1).astype(np.float32)).astype(np.float32)


def _kl(p, q):
    p = p / _seq(p)
    q = q / _seq(q)
    if not (np.all(p > 0) and np.all(q > 0)):
        raise GpundaError(_NON_POSITIVE)
    return _seq(p * np.log((p / q).astype(np.float64)).astype(np.float32))


def _divergence(h, counts, i, zero, nq):
    start, stop = zero - i, zero + i + 1
    if stop > h.size:   # even len(h): MXNet's widest p ends in a bin it leaves at 0
        h, counts = np.append(h, np.float32(0)), np.append(counts, 0)
    p = h[start:stop].copy()
    p[0] = _seq(h[:start + 1])
    p[-1] = _seq(h[stop - 1:])
    sliced = counts[start:stop].copy()
    sliced[0] = 0                          # MXNet's loop never sets the first slot
    merged = sliced.size // nq
    body = sliced[:nq * merged].reshape(nq, merged)
    qbins = body.sum(axis=1)
    qbins[-1] += sliced[nq * merged:].sum()
    nonzero = (body != 0).sum(axis=1)
    nonzero[-1] += int((sliced[nq * merged:] != 0).sum())
    owner = np.minimum(np.arange(sliced.size) // merged, nq - 1)
    with np.errstate(divide="ignore", invalid="ignore"):
        per = np.where(nonzero > 0, qbins.astype(np.float32) / nonzero, 0).astype(np.float32)
    q = np.where(p != 0, per[owner], 0).astype(np.float32)
    p, q = _smooth(p), _smooth(q)
    if q is None:
        return np.float32(np.inf)
    if p is None:
        raise GpundaError(_ALL_ZERO)
    return _kl(p, q)


def _reference(h, e, nq):
    zero = h.size // 2
    counts = h.astype(np.uint64).astype(np.int64)
    best_i, best = 0, np.float32(np.finfo(np.float32).max)
    for k, i in enumerate(range(nq // 2, zero + 1)):
        d = _divergence(h, counts, i, zero, nq)
        if d < best:
            best_i, best = k, d
    if zero + nq // 2 + best_i + 1 >= e.size:
        raise GpundaError("past the end of hist_edges")
    return e[zero + nq // 2 + best_i + 1], best


# -- cases --------------------------------------------------------------------------------

def _edges(nb):
    return ((np.arange(nb + 1) - nb / 2.0) * 0.01).astype(np.float32)


def _gauss(rng, nb, n):
    h, _ = np.histogram(rng.standard_normal(n), bins=nb, range=(-5, 5))
    return h


def _cases():
    rng = np.random.default_rng(7)
    relu = _gauss(rng, 401, 20000)
    relu[:200] = 0                         # ReLU output: nothing left of zero
    ties = np.zeros(301)
    ties[150 - 60:150 + 61] = 1000         # flat: many candidates near-tied
    ties[150 - 20:150 + 21:4] = 1001
    few = np.zeros(401)
    few[[3, 200, 201, 390]] = [5, 1e6, 7e5, 2]   # nearly all mass in two bins
    frac = rng.random(101).astype(np.float32) * 3   # fractional: counts truncate to size_t
    tiny = _gauss(rng, 201, 5000).astype(np.float64)
    tiny[100] = 1e-6                       # p - eps1 < 0: MXNet's CHECK fails
    alt = np.zeros(301)
    alt[::2] = rng.integers(1, 50, 151)    # scattered zeros
    return [
        ("gauss-1001-255", _gauss(rng, 1001, 100000), 255),
        ("gauss-2001-255", _gauss(rng, 2001, 50000), 255),      # several blocks
        ("sparse-2001-255", _gauss(rng, 2001, 300), 255),
        ("gauss-601-511", _gauss(rng, 601, 20000), 511),
        ("relu-401-255", relu, 255),
        ("relu-401-3", relu, 3),
        ("ties-301-31", ties, 31),
        ("few-401-5", few, 5),
        ("few-401-255", few, 255),
        ("frac-101-5", frac, 5),
        ("frac-101-3", frac, 3),
        ("alt-301-255", alt, 255),
        ("small-11-3", rng.integers(0, 20, 11), 3),
        ("small-11-5", rng.integers(0, 20, 11), 5),
        ("small-11-1", rng.integers(0, 20, 11), 1),
        ("small-12-2", rng.integers(0, 20, 12), 2),             # even: one bin past the end
        ("even-12-2", np.arange(12.0) ** 2, 2),                 # ... and it wins
        ("small-101-101", rng.integers(0, 9, 101), 101),
        ("zeros-101-5", np.zeros(101), 5),                      # q empty: all inf
        ("one-101-5", np.eye(1, 101, 50)[0], 5),
        ("tiny-201-5", tiny, 5),                                # raises
        ("huge-101-5", np.full(101, 3e9), 5),                   # counts past 2**31
    ]


_CASES = _cases()


def _run(h, nq):
    h = np.asarray(h, np.float32)
    e = _edges(h.size)
    try:
        want = _reference(h, e, nq)
    except GpundaError as err:
        with pytest.raises(GpundaError, match=str(err)):
            nd.contrib.calibrate_entropy(nd.array(h), nd.array(e), num_quantized_bins=nq)
        return
    t, d = nd.contrib.calibrate_entropy(nd.array(h), nd.array(e), num_quantized_bins=nq)
    got = (t.asnumpy()[0], d.asnumpy()[0])
    assert got[0] == want[0] and got[1].tobytes() == np.float32(want[1]).tobytes(), (got, want)


@pytest.mark.parametrize("name,h,nq", _CASES, ids=[c[0] for c in _CASES])
def test_search_matches_the_one_candidate_loop(name, h, nq):
    _run(h, nq)


@pytest.mark.parametrize("block", [1, 40, 300])
def test_blocks_of_one_two_and_few_candidates(monkeypatch, block):
    # tiny blocks: one candidate a block sums through cumsum, two through the reduction
    monkeypatch.setattr(entropy, "_BLOCK", block)
    rng = np.random.default_rng(3)
    for h, nq in [(_gauss(rng, 101, 3000), 5), (_gauss(rng, 201, 500), 31),
                  (rng.integers(0, 20, 11), 3)]:
        _run(h, nq)


def test_the_divergences_are_all_the_loops():
    # not only the winner: every candidate's divergence, bit for bit
    rng = np.random.default_rng(11)
    h = _gauss(rng, 301, 8000).astype(np.float32)
    counts = h.astype(np.uint64).astype(np.int64)
    div, code = entropy.divergences(h, 31)
    want = [_divergence(h, counts, i, 150, 31) for i in range(15, 151)]
    assert (code == entropy.OK).all()
    assert div.tobytes() == np.array(want, np.float32).tobytes()


@pytest.mark.parametrize("cols", [1, 2, 3, 8, 9, 17, 130])
def test_column_sums_run_left_to_right(cols):
    rng = np.random.default_rng(cols)
    x = (rng.random((3001, cols)) * rng.choice([1e-3, 1.0, 1e3], (3001, cols))).astype(np.float32)
    want = np.array([_seq(x[:, c]) for c in range(cols)], np.float32)
    assert entropy._sums(x).tobytes() == want.tobytes()
    assert not np.array_equal(np.add.reduce(x[:, 0]), want[0])   # pairwise would differ
