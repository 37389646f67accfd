"""``python -m gpunda export-onnx PREFIX EPOCH --shape data=1,3,224,224 [-o model.onnx]``."""
from __future__ import annotations

import argparse
import collections

import numpy as np

from gpunda.base import GpundaError


def _parser():
    p = argparse.ArgumentParser(
        prog="python -m gpunda export-onnx",
        description="Export an MXNet checkpoint (PREFIX-symbol.json + PREFIX-EPOCH.params) "
                    "to ONNX and print what was converted.")
    p.add_argument("prefix", help="checkpoint prefix, e.g. models/resnet")
    p.add_argument("epoch", type=int, help="epoch number of the .params file")
    p.add_argument("--shape", action="append", required=True, metavar="NAME=D0,D1,...",
                   help="shape of a data input, repeated for several inputs (required; no "
                        "default)")
    p.add_argument("--dtype", default="float32",
                   help="dtype of the data inputs (default: float32)")
    p.add_argument("-o", "--output",
                   help="ONNX file to write (default: PREFIX.onnx)")
    p.add_argument("--opset", type=int, default=None,
                   help="ONNX opset version (default: onnx's newest, at most "
                        "21)")
    p.add_argument("--dynamic-batch", action="store_true",
                   help="make the first dim of every input dynamic (default: all dims "
                        "fixed)")
    return p


def _parse_shape(text):
    name, sep, dims = text.partition("=")
    try:
        if not sep or not name:
            raise ValueError
        return name, tuple(int(d) for d in dims.split(",") if d.strip())
    except ValueError:
        raise GpundaError(f"export-onnx: --shape {text!r} is not NAME=D0,D1,...") from None


def main(argv):
    """Entry point of ``python -m gpunda export-onnx``."""
    args = _parser().parse_args(argv)
    from gpunda import model as _model
    from gpunda.onnx.export import export_model
    sym, arg_params, aux_params = _model.load_checkpoint(args.prefix, args.epoch)
    given = dict(_parse_shape(s) for s in args.shape)
    params = dict(arg_params)
    params.update(aux_params)
    data = [n for n in sym.list_inputs() if n not in params]
    unknown = sorted(set(given) - set(data))
    if unknown:
        raise GpundaError(f"export-onnx: --shape names {unknown} are not data inputs of the "
                          f"model; they are {data}")
    names = [n for n in data if n in given]
    shapes = [given[n] for n in names]
    out = args.output or f"{args.prefix}.onnx"
    dyn = [(None,) + tuple(s[1:]) for s in shapes] if args.dynamic_batch else None
    export_model(sym, params, shapes, np.dtype(args.dtype), out, dynamic=args.dynamic_batch,
                 dynamic_input_shapes=dyn, opset_version=args.opset)
    import onnx
    m = onnx.load(out)
    counts = collections.Counter(n["op"] for n in __import__("json").loads(sym.tojson())["nodes"]
                                 if n["op"] != "null")
    onnx_counts = collections.Counter(n.op_type for n in m.graph.node)
    n_params = sum(int(np.prod(v.shape)) for v in params.values())
    print(f"exported {args.prefix}-symbol.json + {args.prefix}-{args.epoch:04d}.params "
          f"-> {out} (opset {m.opset_import[0].version})")
    print("inputs: " + ", ".join(f"{n} {s}" for n, s in zip(names, shapes)))
    print(f"parameters: {len(params)} arrays, {n_params} values")
    print("MXNet ops: " + ", ".join(f"{k} x{v}" for k, v in sorted(counts.items())))
    print("ONNX ops:  " + ", ".join(f"{k} x{v}" for k, v in sorted(onnx_counts.items())))
    return 0
