"""Statistical checks of random generators (mean, variance, chi-square), as test_random uses.

A *generator* is any callable ``generator(n)`` returning ``n`` i.i.d. samples
(NumPy array, NDArray or list).
"""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaError
from gpunda._testing.compare import as_host

__all__ = ["gen_buckets_probs_with_ppf", "mean_check", "var_check", "chi_square_check",
           "verify_generator"]


def gen_buckets_probs_with_ppf(ppf, nbuckets):
    """``nbuckets`` equally likely buckets ``(ppf(i/n), ppf((i+1)/n))`` and their probabilities.

    ``ppf`` is the quantile function (inverse CDF) of the distribution.
    """
    if not isinstance(nbuckets, (int, np.integer)) or nbuckets <= 0:
        raise GpundaError(f"gen_buckets_probs_with_ppf: nbuckets={nbuckets!r} must be a "
                          f"positive int")
    probs = [1.0 / nbuckets] * nbuckets
    buckets = [(ppf(i / float(nbuckets)), ppf((i + 1) / float(nbuckets)))
               for i in range(nbuckets)]
    return buckets, probs


def mean_check(generator, mu, sigma, nsamples=1000000):
    """Whether the sample mean lies within ``mu +- 3 sigma / sqrt(nsamples)``."""
    mean = as_host(generator(nsamples)).mean()
    half = 3 * sigma / np.sqrt(nsamples)
    return bool(mu - half < mean < mu + half)


def var_check(generator, sigma, nsamples=1000000):
    """Whether the sample variance lies within ``sigma**2 +- 3 sqrt(2 sigma**4 / (n - 1))``."""
    var = as_host(generator(nsamples)).var(ddof=1)
    half = 3 * np.sqrt(2 * sigma ** 4 / (nsamples - 1))
    return bool(sigma ** 2 - half < var < sigma ** 2 + half)


def chi_square_check(generator, buckets, probs, nsamples=1000000):
    """Pearson's chi-square test of ``generator`` against bucket probabilities.

    Args:
        buckets: for a continuous distribution, ascending non-overlapping
            ``(low, high)`` ranges (a sample counts in ``[low, high)``); for a
            discrete one, the possible values.
        probs: the true probability of each bucket.
        nsamples: how many samples to draw.

    Returns:
        ``(p, obs_freq, expected_freq)``: the p-value (large when the samples
        fit), observed counts per bucket, and expected counts
        ``int(nsamples * prob)``.
    """
    from scipy import stats
    if not isinstance(buckets, list):
        raise GpundaError(f"chi_square_check: buckets must be a list, got "
                          f"{type(buckets).__name__}")
    if len(probs) != len(buckets):
        raise GpundaError(f"chi_square_check: {len(probs)} probs for {len(buckets)} buckets")
    samples = as_host(generator(nsamples)).ravel()
    expected = (nsamples * np.array(probs, dtype=np.float32)).astype(np.int32)
    if isinstance(buckets[0], (list, tuple)):
        edges = np.zeros(2 * len(buckets), dtype=np.float32)
        for i, (low, high) in enumerate(buckets):
            if low > high or (i + 1 < len(buckets) and high > buckets[i + 1][0]):
                raise GpundaError(f"chi_square_check: bucket {i} {buckets[i]} is not ascending "
                                  f"and apart from the next")
            edges[2 * i], edges[2 * i + 1] = low, high
        pos = np.searchsorted(edges, samples, side="right")
        # an odd position is inside bucket pos // 2; an even one is outside every bucket
        inside = pos[pos % 2 == 1] // 2
        observed = np.bincount(inside, minlength=len(buckets))[:len(buckets)]
    else:
        observed = np.array([(samples == b).sum() for b in buckets])
    observed = observed.astype(np.int64)
    # Pearson's statistic with k - 1 degrees of freedom; scipy.stats.chisquare would
    # refuse counts whose totals differ, which int() truncation of expected causes
    with np.errstate(divide="ignore", invalid="ignore"):
        stat = np.sum((observed - expected) ** 2 / expected.astype(np.float64))
    p = float(stats.chi2.sf(stat, len(buckets) - 1))
    return p, observed, expected


def verify_generator(generator, buckets, probs, nsamples=1000000, nrepeat=5, success_rate=0.2,
                     alpha=0.05):
    """Run ``chi_square_check`` ``nrepeat`` times; fail unless a fraction ``success_rate``
    of the runs has p > ``alpha``. Returns the p-values."""
    runs = [chi_square_check(generator, buckets, probs, nsamples) for _ in range(nrepeat)]
    ps = [r[0] for r in runs]
    if (np.array(ps) > alpha).sum() < nrepeat * success_rate:
        raise AssertionError(
            f"Generator test fails, Chi-square p={ps}, obs_freq={[r[1] for r in runs]}, "
            f"expected_freq={[r[2] for r in runs]}.\nbuckets={buckets}, probs={probs}")
    return ps
