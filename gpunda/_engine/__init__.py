"""The engine layer: ``imperative.invoke`` (every op call), the autograd tape, CachedOp and its
CUDA-graph capture, op monitors, out-of-memory recovery. It sees backend arrays and op records;
the front ends above register the NDArray and Symbol hooks it calls (docs/architecture.md)."""
