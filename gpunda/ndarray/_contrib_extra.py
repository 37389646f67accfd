"""The Python-level functions of MXNet's ``nd.contrib`` (isinf, isfinite, isnan,
rand_zipfian), added to the namespace of ``_contrib_*`` ops."""
from __future__ import annotations

import math

import numpy as np


def isinf(data):
    """1 where ``data`` is +inf or -inf, else 0 (in ``data``'s dtype)."""
    return data.abs() == np.inf


def isfinite(data):
    """1 where ``data`` is neither inf nor NaN, else 0."""
    is_data_not_nan = data == data
    is_data_not_infinity = data.abs() != np.inf
    return is_data_not_infinity * is_data_not_nan


def isnan(data):
    """1 where ``data`` is NaN, else 0."""
    return data != data


def zipfian_counts(uniform, true_classes, num_sampled, range_max):
    """Candidates drawn with replacement from the approximately log-uniform (Zipfian)
    distribution P(c) = log((c + 2) / (c + 1)) / log(range_max + 1) on [0, range_max),
    and the expected counts of the true and the sampled classes. ``uniform(low, high,
    shape, dtype)`` draws (nd's or sym's): the body serves both front ends."""
    log_range = math.log(range_max + 1)
    rand = uniform(0, log_range, (num_sampled,), "float64")
    sampled = (rand.exp() - 1).astype("int64") % range_max

    def expected_count(classes):
        c = classes.astype("float64")
        return ((c + 2.0) / (c + 1.0)).log() / log_range * num_sampled
    return sampled, expected_count(true_classes), expected_count(sampled)


def rand_zipfian(true_classes, num_sampled, range_max, ctx=None):
    """Sample ``num_sampled`` classes of [0, range_max) from the approximately
    log-uniform distribution (classes sorted by decreasing frequency), with replacement.
    Returns (samples int64, expected counts of ``true_classes`` float64, expected counts
    of the samples float64), on ``ctx`` (default: the current context)."""
    from gpunda.context import current_context
    from gpunda import random
    ctx = current_context() if ctx is None else ctx
    return zipfian_counts(
        lambda lo, hi, shape, dtype: random.uniform(lo, hi, shape=shape, dtype=dtype, ctx=ctx),
        true_classes.as_in_context(ctx), num_sampled, range_max)


def extend(contrib):
    """Add the functions above to the ``nd.contrib`` module object."""
    for fn in (isinf, isfinite, isnan, rand_zipfian):
        setattr(contrib, fn.__name__, fn)
    from gpunda.ndarray import control_flow
    for name in control_flow.__all__:
        setattr(contrib, name, getattr(control_flow, name))
