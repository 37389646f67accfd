"""``mx.contrib.quantization`` (also ``mx.contrib.quant``): MXNet's INT8 flow.

Here: the histogram helpers (``combine_histogram``, ``_smooth_distribution``), the
entropy (KL divergence) threshold search ``_get_optimal_threshold(s)``, which runs the
``_contrib_calibrate_entropy`` op as MXNet's does, the monitor-callback collectors
(``_LayerHistogramCollector``, ``_LayerOutputMinMaxCollector``) and the loaders of
calibration inputs (``_load_sym``, ``_load_params``, ``_DataIterWrapper``,
``_as_data_iter``). The user-level flow (``quantize_model``, ``quantize_model_mkldnn``,
``quantize_graph``, ``calib_graph``, ``quantize_net``, ``quantize_net_v2``) lives in
``_quant_flow`` and the graph pass in ``_quant_pass`` (NOTE [Quantization pass]).
"""
from __future__ import annotations

import numpy as np

from gpunda.base import GpundaAssertionError, GpundaTypeError, GpundaValueError
from gpunda.io import DataBatch, DataDesc, DataIter

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


def _monitored_array(arr):
    """The NDArray a monitor callback passes: gpunda's callbacks give the NDArray itself,
    MXNet-style code an ``NDArrayHandle`` (read without taking ownership)."""
    from gpunda.ndarray import NDArray
    if isinstance(arr, NDArray):
        return arr
    import ctypes
    from gpunda.base import NDArrayHandle
    return NDArray(ctypes.cast(arr, NDArrayHandle), writable=False)


def _layer_name(name):
    return name.decode() if isinstance(name, bytes) else name


class _LayerHistogramCollector:
    """Monitor callback that keeps, per layer output named in ``include_layer``, the
    histogram ``(hist, edges, min, max, threshold)`` of every value it has seen:
    ``num_bins`` bins over ``[-th, th]`` with ``th = max(|min|, |max|)``, widened by
    ``combine_histogram`` when later values reach further. Used by entropy calibration."""

    def __init__(self, num_bins=8001, include_layer=None, logger=None):
        self.hist_dict = {}
        self.num_bins = num_bins
        self.include_layer = include_layer
        self.logger = logger

    def collect(self, name, arr):
        """The callback: ``name`` (bytes or str) and the array (NDArray or handle)."""
        name = _layer_name(name)
        if name not in self.include_layer:
            return
        from gpunda.context import cpu
        arr = _monitored_array(arr).copyto(cpu()).asnumpy()
        if self.logger:
            self.logger.debug("Collecting layer %s histogram of shape %s" % (name, arr.shape))
        lo, hi = np.min(arr), np.max(arr)
        th = max(abs(lo), abs(hi))
        if name in self.hist_dict:
            self.hist_dict[name] = combine_histogram(self.hist_dict[name], arr, lo, hi, th)
        else:
            hist, edges = np.histogram(arr, bins=self.num_bins, range=(-th, th))
            self.hist_dict[name] = (hist, edges, lo, hi, th)


class _LayerOutputMinMaxCollector:
    """Monitor callback that keeps, per layer output named in ``include_layer``, the
    smallest and largest value seen: ``min_max_dict[name] = (min, max)``, the thresholds
    of naive calibration."""

    def __init__(self, quantized_dtype, include_layer=None, logger=None):
        self.min_max_dict = {}
        self.quantized_dtype = quantized_dtype
        self.include_layer = include_layer
        self.logger = logger

    def collect(self, name, arr):
        """The callback: ``name`` (bytes or str) and the array (NDArray or handle)."""
        name = _layer_name(name)
        if name not in self.include_layer:
            return
        from gpunda import ndarray
        arr = _monitored_array(arr)
        lo = ndarray.min(arr).asscalar()
        hi = ndarray.max(arr).asscalar()
        if name in self.min_max_dict:
            old_lo, old_hi = self.min_max_dict[name]
            self.min_max_dict[name] = (min(old_lo, lo), max(old_hi, hi))
        else:
            self.min_max_dict[name] = (lo, hi)
        if self.logger:
            self.logger.debug("Collecting layer %s min_range=%f, max_range=%f"
                              % (name, lo, hi))


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


def _load_sym(sym, logger=None):
    """A Symbol, or one loaded from a ``.json`` path (taken relative to this module's
    folder, as MXNet's; an absolute path is itself)."""
    import os
    from gpunda.symbol import Symbol, load
    if isinstance(sym, str):
        path = os.path.join(os.path.dirname(os.path.realpath(__file__)), sym)
        if logger:
            logger.info("Loading symbol from file %s" % path)
        return load(path)
    if isinstance(sym, Symbol):
        return sym
    raise GpundaValueError(f"_load_sym only accepts Symbol or path to the symbol file, while "
                           f"received type {type(sym)}")


def _load_params(params, logger=None):
    """``(arg_params, aux_params)`` from a ``.params`` path (relative to this module's
    folder; keys ``arg:``/``aux:``, others dropped) or from such a pair itself."""
    import os
    from gpunda.ndarray import load
    if isinstance(params, str):
        path = os.path.join(os.path.dirname(os.path.realpath(__file__)), params)
        if logger:
            logger.info("Loading params from file %s" % path)
        arg_params, aux_params = {}, {}
        for key, value in load(path).items():
            kind, name = key.split(":", 1)
            if kind == "arg":
                arg_params[name] = value
            elif kind == "aux":
                aux_params[name] = value
        return arg_params, aux_params
    if isinstance(params, (tuple, list)) and len(params) == 2:
        return params[0], params[1]
    raise GpundaValueError("Unsupported params provided. Must be either a path to the param "
                           "file or a pair of dictionaries representing arg_params and "
                           "aux_params")


def _fold_leading_axes(x):
    # 5-d/6-d calibration data: the first two axes become one batch axis
    return x.reshape((-1,) + x.shape[2:]) if len(x.shape) > 4 else x


class _DataIterWrapper(DataIter):
    """A DataIter over any iterable of batches (a Gluon DataLoader, a list), for
    calibration. Each item is an array or a list/tuple of arrays; with one or two arrays
    the inputs are named 'data' and 'data0', with three or more 'data0', 'data1', ...
    The batch size is the first array's first axis (after folding a 5-d/6-d array's two
    leading axes into one)."""

    def __init__(self, calib_data):   # noqa: D107  (DataIter.__init__ not called, as MXNet's)
        self._data = calib_data
        try:
            first = iter(calib_data)
        except TypeError as e:
            raise GpundaTypeError(f"calib_data is not a valid iterator. {e}") from None
        example = next(first)
        example = list(example) if isinstance(example, (list, tuple)) else [example]
        if not example:
            raise GpundaAssertionError("_DataIterWrapper: a calibration batch holds no arrays")
        example[0] = _fold_leading_axes(example[0])
        if len(example) >= 3:
            self.provide_data = [DataDesc(name=f"data{i}", shape=x.shape)
                                 for i, x in enumerate(example)]
        else:
            self.provide_data = ([DataDesc(name="data", shape=example[0].shape)]
                                 + [DataDesc(name=f"data{i}", shape=x.shape)
                                    for i, x in enumerate(example[1:])])
        self.batch_size = example[0].shape[0]
        self.reset()

    def reset(self):
        self._iter = iter(self._data)

    def next(self):
        batch = next(self._iter)
        if len(batch[0].shape) > 4:
            batch[0] = _fold_leading_axes(batch[0])
        return DataBatch(data=batch)


def _as_data_iter(calib_data):
    """``(iterator, provide_data)``: a DataIter as it is, anything else wrapped in a
    ``_DataIterWrapper``."""
    if not isinstance(calib_data, DataIter):
        calib_data = _DataIterWrapper(calib_data)
    return calib_data, calib_data.provide_data


# the flow reads the collectors above; imported last so that it can
from gpunda.contrib._quant_flow import (  # noqa: E402
    _calibrate_quantized_sym, _collect_layer_histogram, _collect_layer_output_min_max,
    _collect_layer_statistics, _quantize_params, _quantize_symbol, calib_graph,
    quantize_graph, quantize_model, quantize_model_mkldnn, quantize_net, quantize_net_v2)
