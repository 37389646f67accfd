"""``mx.contrib.quantization`` (also ``mx.contrib.quant``): the calibration helpers of
MXNet's int8 flow.

Built: the histogram helpers (``combine_histogram``, ``_smooth_distribution``) and the
entropy (KL divergence) threshold search ``_get_optimal_threshold(s)``, which runs the
``_contrib_calibrate_entropy`` op as MXNet's does. Not built yet: the graph rewriting
(``quantize_model``, ``quantize_graph``, ``quantize_net``, ...), which in MXNet is a C++
pass (``MXQuantizeSymbol``) with MKL-DNN subgraph backends; those names raise
NotImplementedForGpunda.
"""
from __future__ import annotations

import numpy as np

from gpunda.base import NotImplementedForGpunda

__all__ = ["combine_histogram", "quantize_model", "quantize_model_mkldnn", "quantize_graph",
           "calib_graph", "quantize_net", "quantize_net_v2"]


def combine_histogram(old_hist, arr, new_min, new_max, new_th):
    """Merge ``arr`` (a NumPy array) into a layer's histogram, widening it when ``arr``
    reaches past the old threshold (MXNet's rule: the old bins are re-centred in a wider
    grid of the same bin width).

    Args:
        old_hist: ``(hist, hist_edges, min_val, max_val, threshold)``.
        arr: the new values.
        new_min, new_max, new_th: ``arr``'s min, max and max(|min|, |max|).
    Returns:
        The merged ``(hist, hist_edges, min_val, max_val, threshold)``.
    """
    (old_hist, old_edges, old_min, old_max, old_th) = old_hist
    if new_th <= old_th:
        hist, _ = np.histogram(arr, bins=len(old_hist), range=(-old_th, old_th))
        return (old_hist + hist, old_edges, min(old_min, new_min), max(old_max, new_max),
                old_th)
    old_bins = len(old_hist)
    width = 2 * old_th / old_bins
    half_increased = int((new_th - old_th) // width + 1)
    new_bins = old_bins + half_increased * 2
    new_th = half_increased * width + old_th
    hist, edges = np.histogram(arr, bins=new_bins, range=(-new_th, new_th))
    hist[half_increased:new_bins - half_increased] += old_hist
    return hist, edges, min(old_min, new_min), max(old_max, new_max), new_th


def _smooth_distribution(p, eps=0.0001):
    """``p`` (counts, not necessarily normalised) with eps added to its zeros and the same
    mass taken evenly off its non-zeros, as float32.

    Raises:
        ValueError: when every entry is 0.
        AssertionError: when eps would make an entry non-positive (as MXNet's).
    """
    p = np.asarray(p)
    is_zeros = (p == 0).astype(np.float32)
    is_nonzeros = (p != 0).astype(np.float32)
    n_zeros = is_zeros.sum()
    n_nonzeros = p.size - n_zeros
    if not n_nonzeros:
        raise ValueError("The discrete probability distribution is malformed. All entries "
                         "are 0.")
    eps1 = eps * float(n_zeros) / float(n_nonzeros)
    assert eps1 < 1.0, f"n_zeros={n_zeros}, n_nonzeros={n_nonzeros}, eps1={eps1}"
    hist = p.astype(np.float32)
    hist += eps * is_zeros + (-eps1) * is_nonzeros
    assert (hist <= 0).sum() == 0
    return hist


def _get_optimal_threshold(hist_data, quantized_dtype, num_quantized_bins=255):
    """The KL-optimal threshold of one layer's histogram.

    Args:
        hist_data: ``(hist, hist_edges, min_val, max_val, threshold)``; an odd number of
            bins centred on 0.
        quantized_dtype: 'int8', 'uint8' or 'auto'; a non-negative layer quantized to
            uint8 searches with ``2 * num_quantized_bins + 1`` bins (its negative half is
            empty).
    Returns:
        ``(min_val, max_val, threshold, divergence)``, the last two as (1,) float32 arrays.
    """
    from gpunda import ndarray
    from gpunda.context import cpu
    hist, hist_edges, min_val, max_val, _ = hist_data
    if len(hist) % 2 != 1:
        raise AssertionError(f"_get_optimal_threshold: the histogram needs an odd number of "
                             f"bins, got {len(hist)}")
    if min_val >= 0 and quantized_dtype in ("auto", "uint8"):
        num_quantized_bins = num_quantized_bins * 2 + 1
    threshold, divergence = ndarray.contrib.calibrate_entropy(
        hist=ndarray.array(hist, ctx=cpu()), hist_edges=ndarray.array(hist_edges, ctx=cpu()),
        num_quantized_bins=num_quantized_bins)
    return min_val, max_val, threshold.asnumpy(), divergence.asnumpy()


def _get_optimal_thresholds(hist_dict, quantized_dtype, num_quantized_bins=255, logger=None):
    """``{layer: (lo, hi)}``: each layer's KL-optimal range, ``(0, th)`` for a non-negative
    layer quantized to uint8, else ``(-th, th)``. Entries of ``hist_dict`` are consumed
    (deleted) as MXNet's are, to free their memory."""
    if not isinstance(hist_dict, dict):
        raise AssertionError("_get_optimal_thresholds: hist_dict must be a dict")
    if logger is not None:
        logger.info("Calculating optimal thresholds for quantization using KL divergence "
                    "with num_quantized_bins=%d", num_quantized_bins)
    th_dict = {}
    for name in list(hist_dict):
        min_val, max_val, th, divergence = _get_optimal_threshold(
            hist_dict[name], quantized_dtype, num_quantized_bins=num_quantized_bins)
        if min_val >= 0 and quantized_dtype in ("auto", "uint8"):
            th_dict[name] = (0, th)
        else:
            th_dict[name] = (-th, th)
        del hist_dict[name]
        if logger:
            logger.debug("layer=%s, min_val=%f, max_val=%f, th=%f, divergence=%f",
                         name, min_val, max_val, float(th[0]), float(divergence[0]))
    return th_dict


def _not_built(name):
    def fn(*args, **kwargs):
        raise NotImplementedForGpunda(
            f"mx.contrib.quantization.{name} is not supported yet: gpunda does not build "
            f"MXNet's graph quantization pass (the quantized ops and the entropy "
            f"calibration are built)")
    fn.__name__ = name
    fn.__doc__ = f"MXNet's ``{name}``: not supported yet (raises NotImplementedForGpunda)."
    return fn


for _name in ("quantize_model", "quantize_model_mkldnn", "quantize_graph", "calib_graph",
              "quantize_net", "quantize_net_v2", "_quantize_params", "_quantize_symbol",
              "_calibrate_quantized_sym", "_collect_layer_statistics",
              "_collect_layer_output_min_max", "_collect_layer_histogram"):
    globals()[_name] = _not_built(_name)
del _name
