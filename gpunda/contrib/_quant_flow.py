"""The user-level INT8 flow of ``mx.contrib.quantization``: quantize a Symbol or a Gluon
HybridBlock, collect calibration ranges from float runs and write them into the graph,
quantize the weights. MXNet 1.9.1's python/mxnet/contrib/quantization.py is the spec; the
graph rewriting itself is ``_quant_pass`` (NOTE [Quantization pass]).

``quantize_model_mkldnn`` and ``quantize_net(_v2)`` on the CPU fuse the graph before and
after quantizing as MXNet's MKLDNN_QUANTIZE backend does (``_mkldnn_fuse``, NOTE [MKLDNN
fusion]), so they give MXNet's ``_sg_mkldnn_conv`` / ``_sg_mkldnn_fully_connected`` nodes.
"""
from __future__ import annotations

import logging
import os
import warnings

from gpunda.base import GpundaValueError


def _quantize_params(qsym, params, th_dict):
    """The quantized symbol's arguments from the float ``params``: each
    ``*weight_quantize``/``*bias_quantize`` argument is its float param quantized to int8
    over the param's own min/max (with ``_min``/``_max`` beside it); other arguments are
    copied; a ``<layer>_min``/``_max`` argument takes ``th_dict``'s range of that layer."""
    from gpunda import ndarray
    quantized = {}
    for name in qsym.list_arguments():
        if name.endswith(("weight_quantize", "bias_quantize")):
            param = params[name[:-len("_quantize")]]
            val, vmin, vmax = ndarray.contrib.quantize(
                data=param, min_range=ndarray.min(param), max_range=ndarray.max(param),
                out_type="int8")
            quantized[name] = val
            quantized[name + "_min"] = vmin
            quantized[name + "_max"] = vmax
        elif name in params:
            quantized[name] = params[name]
        elif name.endswith("_min"):
            layer = name[:-len("_min")]
            if layer in th_dict:
                quantized[name] = ndarray.array([th_dict[layer][0]])
        elif name.endswith("_max"):
            layer = name[:-len("_min")]     # MXNet's slice, kept: '_max' is as long
            if layer in th_dict:
                quantized[name] = ndarray.array([th_dict[layer][1]])
    return quantized


def _quantize_symbol(sym, ctx, excluded_symbols=None, excluded_operators=None,
                     offline_params=None, quantized_dtype="int8", quantize_mode="smart",
                     quantize_granularity="tensor-wise"):
    """``(quantized Symbol, calibration layer names)`` of the float ``sym`` for the device
    of ``ctx`` (MXNet's MXQuantizeSymbol)."""
    from gpunda.contrib._quant_pass import quantize_symbol
    if excluded_symbols is not None and not isinstance(excluded_symbols, list):
        raise AssertionError("_quantize_symbol: excluded_symbols must be a list")
    if excluded_operators is not None and not isinstance(excluded_operators, list):
        raise AssertionError("_quantize_symbol: excluded_operators must be a list")
    return quantize_symbol(sym, dev_type=ctx.device_type,
                           excluded_names=excluded_symbols or (),
                           excluded_ops=excluded_operators or (),
                           offline_params=offline_params or (),
                           quantized_dtype=quantized_dtype, quantize_mode=quantize_mode,
                           quantize_granularity=quantize_granularity)


def _calibrate_quantized_sym(qsym, th_dict):
    """``qsym`` with the ranges of ``th_dict`` ({layer output: (min, max)}) set as the
    ``min_calib_range``/``max_calib_range`` of the nodes they calibrate."""
    from gpunda.contrib._quant_pass import set_calib_table
    if not th_dict:
        return qsym
    return set_calib_table(qsym, th_dict)


def _collect_layer_statistics(mod, data, collector, max_num_examples=None, logger=None):
    """Run ``mod`` forward over ``data`` (a DataIter) with ``collector.collect`` as the
    monitor callback of every op input and output; the number of examples seen."""
    from gpunda.io import DataIter
    if not isinstance(data, DataIter):
        raise ValueError("Only supports data as a type of DataIter, while received type %s"
                         % str(type(data)))
    mod._exec_group.execs[0].set_monitor_callback(collector.collect, monitor_all=True)
    num_batches = num_examples = 0
    for batch in data:
        mod.forward(data_batch=batch, is_train=False)
        num_batches += 1
        num_examples += data.batch_size
        if max_num_examples is not None and num_examples >= max_num_examples:
            break
    if logger is not None:
        logger.info("Collected statistics from %d batches with batch_size=%d"
                    % (num_batches, data.batch_size))
    return num_examples


def _collect_layer_output_min_max(mod, data, quantized_dtype, include_layer=None,
                                  max_num_examples=None, logger=None):
    """``({layer: (min, max)}, examples)`` over ``data``."""
    from gpunda.contrib.quantization import _LayerOutputMinMaxCollector
    collector = _LayerOutputMinMaxCollector(quantized_dtype=quantized_dtype,
                                            include_layer=include_layer, logger=logger)
    n = _collect_layer_statistics(mod, data, collector, max_num_examples, logger)
    return collector.min_max_dict, n


def _collect_layer_histogram(mod, data, include_layer=None, max_num_examples=None,
                             logger=None):
    """``({layer: histogram tuple}, examples)`` over ``data``."""
    from gpunda.contrib.quantization import _LayerHistogramCollector
    collector = _LayerHistogramCollector(include_layer=include_layer, logger=logger)
    n = _collect_layer_statistics(mod, data, collector, max_num_examples, logger)
    return collector.hist_dict, n


def _check_common(excluded_sym_names, excluded_op_names, quantized_dtype,
                  quantize_granularity):
    if excluded_sym_names is None:
        excluded_sym_names = []
    if not isinstance(excluded_sym_names, list):
        raise ValueError("excluded_sym_names must be a list of strings representing the "
                         "names of the symbols that will not be quantized, while received "
                         "type %s" % str(type(excluded_sym_names)))
    if excluded_op_names is None:
        excluded_op_names = []
    if not isinstance(excluded_op_names, list):
        raise ValueError("excluded_op_names must be a list of strings representing the "
                         "names of the operators that will not be quantized, while received "
                         "type %s" % str(type(excluded_op_names)))
    if quantized_dtype not in ("int8", "uint8", "auto"):
        raise ValueError("unknown quantized_dtype %s received, expected `int8`, `uint8` or "
                         "`auto`" % quantized_dtype)
    if quantize_granularity not in ("tensor-wise", "channel-wise"):
        raise ValueError("unkonwn quantize_granularity %s received, expected `tensor-wise` "
                         "or `channel-wise`." % quantize_granularity)
    return excluded_sym_names, excluded_op_names


def quantize_model(sym, arg_params, aux_params, data_names=("data",),
                   label_names=("softmax_label",), ctx=None, excluded_sym_names=None,
                   excluded_op_names=None, calib_mode="entropy", calib_data=None,
                   num_calib_examples=None, quantized_dtype="int8", quantize_mode="smart",
                   quantize_granularity="tensor-wise", logger=None):
    """Quantize a float model: ``(qsym, qarg_params, aux_params)``.

    ``calib_mode`` 'none' leaves the ranges to be computed at run time; 'naive' takes
    each layer output's min/max over ``calib_data`` (a DataIter); 'entropy' the
    KL-divergence-optimal threshold of its histogram. Ops named in
    ``excluded_sym_names`` or of a type in ``excluded_op_names`` stay float.
    """
    from gpunda.context import Context, cpu
    from gpunda.contrib import quantization as q
    from gpunda.io import DataIter
    from gpunda.module import Module
    ctx = cpu() if ctx is None else ctx
    excluded_sym_names, excluded_op_names = _check_common(
        excluded_sym_names, excluded_op_names, quantized_dtype, quantize_granularity)
    if logger:
        os.environ["MXNET_QUANTIZATION_VERBOSE"] = "1"
        logger.info("Quantizing symbol")
    qsym, calib_layer = _quantize_symbol(
        sym, ctx, excluded_symbols=excluded_sym_names, excluded_operators=excluded_op_names,
        offline_params=list(arg_params.keys()), quantized_dtype=quantized_dtype,
        quantize_mode=quantize_mode, quantize_granularity=quantize_granularity)
    th_dict = {}
    if calib_mode is not None and calib_mode != "none":
        if not isinstance(ctx, Context):
            raise ValueError("currently only supports single ctx, while received %s"
                             % str(ctx))
        if calib_data is None:
            raise ValueError("calib_data must be provided when calib_mode=%s" % calib_mode)
        if not isinstance(calib_data, DataIter):
            raise ValueError("calib_data must be of DataIter type when calib_mode=%s, while "
                             "received type %s" % (calib_mode, str(type(calib_data))))
        mod = Module(symbol=sym, data_names=data_names, label_names=label_names, context=ctx)
        if len(calib_data.provide_label) > 0:
            mod.bind(for_training=False, data_shapes=calib_data.provide_data,
                     label_shapes=calib_data.provide_label)
        else:
            mod.bind(for_training=False, data_shapes=calib_data.provide_data)
        mod.set_params(arg_params, aux_params)
        if calib_mode == "entropy":
            hist_dict, n = _collect_layer_histogram(
                mod, calib_data, include_layer=calib_layer,
                max_num_examples=num_calib_examples, logger=logger)
            if logger:
                logger.info("Collected layer outputs from FP32 model using %d examples" % n)
                logger.info("Calculating optimal thresholds for quantization")
            th_dict = q._get_optimal_thresholds(hist_dict, quantized_dtype, logger=logger)
        elif calib_mode == "naive":
            th_dict, n = _collect_layer_output_min_max(
                mod, calib_data, quantized_dtype, include_layer=calib_layer,
                max_num_examples=num_calib_examples, logger=logger)
            if logger:
                logger.info("Collected layer output min/max values from FP32 model using "
                            "%d examples" % n)
        else:
            raise ValueError("unknown calibration mode %s received, expected `none`, "
                             "`naive`, or `entropy`" % calib_mode)
        qsym = _calibrate_quantized_sym(qsym, th_dict)
    if logger:
        logger.info("Quantizing parameters")
    return qsym, _quantize_params(qsym, arg_params, th_dict), aux_params


def quantize_model_mkldnn(sym, arg_params, aux_params, data_names=("data",),
                          label_names=("softmax_label",), ctx=None, excluded_sym_names=None,
                          excluded_op_names=None, calib_mode="entropy", calib_data=None,
                          num_calib_examples=None, quantized_dtype="int8",
                          quantize_mode="smart", quantize_granularity="tensor-wise",
                          logger=None):
    """MXNet's CPU flow: the float graph fused into ``_sg_mkldnn_*`` nodes (conv with
    BatchNorm, act and residual sum; FC with its act), quantized and calibrated as
    ``quantize_model`` does, then each calibrated requantize (and a dequantize after an
    FC) folded into the node before it (NOTE [MKLDNN fusion])."""
    from gpunda.context import Context, cpu
    from gpunda.contrib._mkldnn_fuse import fuse_for_quantization, post_quantize
    ctx = cpu() if ctx is None else ctx
    if not isinstance(ctx, Context):
        raise ValueError("currently only supports single ctx, while received %s" % str(ctx))
    if ctx.device_type != "cpu":
        raise ValueError("quantize_model_mkldnn only support Intel cpu platform with "
                         "MKL-DNN Backend")
    sym = fuse_for_quantization(sym)
    qsym, qarg_params, aux_params = quantize_model(
        sym, arg_params, aux_params, data_names=data_names, label_names=label_names,
        ctx=ctx, excluded_sym_names=excluded_sym_names, excluded_op_names=excluded_op_names,
        calib_mode=calib_mode, calib_data=calib_data, num_calib_examples=num_calib_examples,
        quantized_dtype=quantized_dtype, quantize_mode=quantize_mode,
        quantize_granularity=quantize_granularity, logger=logger)
    return post_quantize(qsym), qarg_params, aux_params


def quantize_graph(sym, arg_params, aux_params, ctx=None, excluded_sym_names=None,
                   excluded_op_names=None, calib_mode="entropy", quantized_dtype="int8",
                   quantize_mode="full", quantize_granularity="tensor-wise",
                   LayerOutputCollector=None, logger=None):
    """Quantize the graph without calibrating it: ``(qsym, qarg_params, aux_params,
    collector)``, the collector (None for calib_mode 'none') to be set as a monitor
    callback on float runs and handed to ``calib_graph``."""
    from gpunda.context import Context, cpu
    from gpunda.contrib import quantization as q
    ctx = cpu() if ctx is None else ctx
    if excluded_sym_names is not None and not isinstance(excluded_sym_names, list):
        _check_common(excluded_sym_names, None, quantized_dtype, quantize_granularity)
    if not isinstance(ctx, Context):
        raise ValueError("currently only supports single ctx, while received %s" % str(ctx))
    excluded_sym_names, _ = _check_common(excluded_sym_names, None, quantized_dtype,
                                          quantize_granularity)
    if logger:
        os.environ["MXNET_QUANTIZATION_VERBOSE"] = "1"
        logger.info("Quantizing graph")
    qsym, calib_layer = _quantize_symbol(
        sym, ctx, excluded_symbols=excluded_sym_names, excluded_operators=excluded_op_names,
        offline_params=list(arg_params.keys()), quantized_dtype=quantized_dtype,
        quantize_mode=quantize_mode, quantize_granularity=quantize_granularity)
    collector = None
    if calib_mode is not None and calib_mode != "none":
        if calib_mode == "entropy":
            collector = q._LayerHistogramCollector(include_layer=calib_layer, logger=logger)
        elif calib_mode == "naive":
            collector = q._LayerOutputMinMaxCollector(quantized_dtype=quantized_dtype,
                                                      include_layer=calib_layer,
                                                      logger=logger)
        elif calib_mode == "customize" and LayerOutputCollector is not None:
            collector = LayerOutputCollector
        else:
            raise ValueError("unknown calibration mode %s received, expected `none`, "
                             "`naive`, `entropy` or `customize`" % calib_mode)
        if logger:
            logger.info("Collector created, please use set_monitor_callback to collect "
                        "calibration information.")
    if logger:
        logger.info("Quantizing parameters")
    return qsym, _quantize_params(qsym, arg_params, {}), aux_params, collector


def calib_graph(qsym, arg_params, aux_params, collector, calib_mode="entropy",
                quantized_dtype="int8", logger=logging):
    """Write the ranges a filled ``collector`` holds into ``qsym``: ``(qsym,
    qarg_params, aux_params)``. calib_mode 'none' is refused, as in MXNet."""
    from gpunda.contrib import quantization as q
    if calib_mode is not None and calib_mode != "none":
        if calib_mode == "entropy":
            if logger:
                logger.info("Calculating optimal thresholds for quantization")
            th_dict = q._get_optimal_thresholds(collector.hist_dict, quantized_dtype,
                                                logger=logger)
        elif calib_mode in ("naive", "customize"):
            th_dict = collector.min_max_dict
        else:
            raise ValueError("unknown calibration mode %s received, expected `none`, "
                             "`naive`, `entropy` or `customize`" % calib_mode)
        qsym = _calibrate_quantized_sym(qsym, th_dict)
    else:
        raise ValueError("please set calibration mode to naive or entropy.")
    if logger:
        logger.info("Quantizing parameters")
    return qsym, _quantize_params(qsym, arg_params, th_dict), aux_params


def quantize_net_v2(network, quantized_dtype="auto", quantize_mode="full",
                    quantize_granularity="tensor-wise", exclude_layers=None,
                    exclude_layers_match=None, exclude_operators=None, calib_data=None,
                    data_shapes=None, calib_mode="none", num_calib_examples=None, ctx=None,
                    LayerOutputCollector=None, logger=None):
    """Quantize a Gluon HybridBlock: a SymbolBlock running the quantized graph.

    ``calib_data`` is a DataIter, a Gluon DataLoader or any iterable of batches (an
    array or a list of arrays each); ``data_shapes`` (DataDesc list) is needed without
    it. Layers whose names contain a string of ``exclude_layers_match`` stay float.
    """
    import tempfile
    from gpunda import ndarray as nd
    from gpunda import symbol as sym_mod
    from gpunda.context import Context, cpu
    from gpunda.contrib.quantization import _as_data_iter
    from gpunda.gluon import SymbolBlock
    from gpunda.io import DataIter
    from gpunda.model import load_checkpoint
    from gpunda.module import Module
    from gpunda.contrib._mkldnn_fuse import fuse_for_quantization, post_quantize
    ctx = cpu() if ctx is None else ctx
    if logger:
        logger.info("Export HybridBlock")
    network.hybridize()
    if calib_data is not None:
        if isinstance(calib_data, DataIter):
            dshapes = calib_data.provide_data
        else:
            calib_data, dshapes = _as_data_iter(calib_data)
        if not data_shapes:
            data_shapes = dshapes
    if not data_shapes:
        raise ValueError("data_shapes required")
    data_nd = [nd.zeros(shape.shape) for shape in data_shapes]
    while True:      # drop trailing inputs (labels) the network does not take
        try:
            network(*data_nd)
        except TypeError:
            del data_nd[-1]
            del calib_data.provide_data[-1]
            continue
        else:
            break
    with tempfile.TemporaryDirectory() as tmp:
        prefix = os.path.join(tmp, "tmp")
        network.export(prefix, epoch=0)
        symnet, args, auxs = load_checkpoint(prefix, 0)
    exclude_layers = list(exclude_layers or [])
    exclude_operators = list(exclude_operators or [])
    for match in exclude_layers_match or []:
        for layer in list(symnet.get_internals()):
            if layer.name.find(match) != -1:
                exclude_layers.append(layer.name)
    if logger:
        logger.info("These layers have been excluded %s" % exclude_layers)
    if ctx == cpu():
        symnet = fuse_for_quantization(symnet)
    qsym, qarg_params, aux_params, collector = quantize_graph(
        sym=symnet, arg_params=args, aux_params=auxs, ctx=ctx,
        excluded_sym_names=exclude_layers, excluded_op_names=exclude_operators,
        calib_mode=calib_mode, quantized_dtype=quantized_dtype, quantize_mode=quantize_mode,
        quantize_granularity=quantize_granularity,
        LayerOutputCollector=LayerOutputCollector, logger=logger)
    if calib_mode is not None and calib_mode != "none":
        if not isinstance(ctx, Context):
            raise ValueError("currently only supports single ctx, while received %s"
                             % str(ctx))
        if calib_data is None:
            raise ValueError("calib_data must be provided when calib_mode=%s" % calib_mode)
        if calib_mode not in ("naive", "entropy", "customize"):
            raise ValueError("please set calibration mode to naive or entropy.")
        data_names = [pair[0] for pair in calib_data.provide_data]
        mod = Module(symbol=symnet, context=ctx, data_names=data_names, label_names=None)
        mod.bind(for_training=False, data_shapes=data_shapes)
        mod.set_params(args, auxs, allow_missing=False, force_init=True)
        n = _collect_layer_statistics(mod, calib_data, collector, num_calib_examples, logger)
        if logger:
            logger.info("Collected layer output values from FP32 model using %d examples"
                        % n)
        qsym, qarg_params, aux_params = calib_graph(
            qsym=qsym, arg_params=args, aux_params=auxs, collector=collector,
            calib_mode=calib_mode, quantized_dtype=quantized_dtype, logger=logger)
    else:
        data_names = [pair[0] for pair in data_shapes]
    if ctx == cpu():
        qsym = post_quantize(qsym)
    net = SymbolBlock(qsym, [sym_mod.var(name) for name in data_names])
    with tempfile.TemporaryDirectory() as tmp:
        param_name = os.path.join(tmp, "tmpnet-quantized-0000.params")
        save_dict = {"arg:%s" % k: v.as_in_context(cpu()) for k, v in qarg_params.items()}
        save_dict.update({"aux:%s" % k: v.as_in_context(cpu())
                          for k, v in aux_params.items()})
        nd.save(param_name, save_dict)
        net.collect_params().load(param_name, cast_dtype=True, dtype_source="saved")
        net.collect_params().reset_ctx(ctx)
    return net


def quantize_net(network, quantized_dtype="auto", quantize_mode="full", exclude_layers=None,
                 exclude_layers_match=None, exclude_operators=None, calib_data=None,
                 data_shapes=None, calib_mode="none", num_calib_examples=None, ctx=None,
                 logger=None):
    """``quantize_net_v2`` with tensor-wise granularity (MXNet warns it is deprecated)."""
    warnings.warn("WARNING: This will be deprecated after MXNet 2.0, please use "
                  "quantize_net_v2.")
    return quantize_net_v2(network=network, quantized_dtype=quantized_dtype,
                           quantize_mode=quantize_mode, quantize_granularity="tensor-wise",
                           exclude_layers=exclude_layers,
                           exclude_layers_match=exclude_layers_match,
                           exclude_operators=exclude_operators, calib_data=calib_data,
                           data_shapes=data_shapes, calib_mode=calib_mode,
                           num_calib_examples=num_calib_examples, ctx=ctx,
                           LayerOutputCollector=None, logger=logger)
