#!/usr/bin/env bash
# The one check to run first on a machine with a real GPU (about 8 minutes): the gpu-marked
# tests, gpunda's whole suite and the MXNet suite with gpu(0) as the default context, DLPack
# with CuPy and PyTorch, NCCL, the GPU benchmarks (the 50-op CachedOp graph replayed through
# CUDA graphs vs eager, the MLP and demo CNN steps vs PyTorch CUDA, element-wise bandwidth as
# a fraction of the card's peak), then one short table, last.
# Usage (repo root, on the device machine): bash ci/gpu_check.sh
# Writes everything under ${OUT:-/tmp/gpu_check}; needs cupy (cupy-cuda12x) installed.
set -u
out="${OUT:-/tmp/gpu_check}"
mkdir -p "$out"
export PYTHONUNBUFFERED=1
python -c "import cupy; print('cupy', cupy.__version__, 'devices', cupy.cuda.runtime.getDeviceCount())" \
    2>&1 | tee "$out/cupy.txt"
pip install -q -e '.[test]' >/dev/null 2>&1 || pip install -q --no-deps -e . >/dev/null 2>&1
python -m gpunda info 2>&1 | tee "$out/info.txt"
# 1. tests: the gpu-marked ones (CUDA graphs, the capture-safe GEMM, DLPack with CuPy and
#    PyTorch, NCCL with the GPUs there are), then everything with gpu(0) as the default
timeout 150 python -m pytest -q -m gpu -p no:cacheprovider 2>&1 | tail -25 | tee "$out/pytest_gpu.txt"
GPUNDA_DEFAULT_DEVICE=gpu timeout 150 python -m pytest -q -p no:cacheprovider -x \
    --timeout 60 2>&1 | tail -15 | tee "$out/pytest_default_gpu.txt"
# 2. MXNet's own tests with gpu(0) as their default context (MXNet's GPU suite), the files
#    of the core API only, to keep within the time
if [ -d ../shared/mxnet-suite ]; then
    timeout 120 python ci/mxnet_suite.py --context gpu --out "$out/mxsuite" 2>&1 | tail -8 \
        | tee "$out/mxsuite.txt"
fi
# 3. benchmarks: gpunda on CuPy vs PyTorch CUDA, short rounds
timeout 150 python -m bench --device gpu --frameworks numpy,gpunda,torch --cases w1,w2,w3,w4,w7 \
    --rounds 3 --block-seconds 0.1 --out "$out/bench" 2>"$out/bench.err" | tee "$out/bench.md"
timeout 30 python - <<'EOF' 2>&1 | tee "$out/bandwidth.txt"
# element-wise a + b on 256 MiB float32 arrays: bytes moved per second vs the card's peak
import time
import cupy as cp
import gpunda as mx
props = cp.cuda.runtime.getDeviceProperties(0)
peak = 2 * props["memoryClockRate"] * 1e3 * props["memoryBusWidth"] / 8     # bytes/s, DDR
n = 64 * 2 ** 20
a = mx.nd.ones((n,), ctx=mx.gpu(0))
b = mx.nd.ones((n,), ctx=mx.gpu(0))
for _ in range(3):
    c = a + b
mx.nd.waitall()
reps = 50
t = time.perf_counter()
for _ in range(reps):
    c = a + b
mx.nd.waitall()
dt = (time.perf_counter() - t) / reps
bw = 3 * n * 4 / dt
print(f"bandwidth a+b: {bw / 1e9:.0f} GB/s of {peak / 1e9:.0f} GB/s peak = {bw / peak:.0%} "
      f"(target >= 80%)")
EOF
# 4. the short table, last
echo
echo "== GPU check summary =="
grep -hE "passed|failed|error" "$out"/pytest_*.txt | sed 's/^/tests: /'
grep -hE "ratchet" "$out/mxsuite.txt" 2>/dev/null | sed 's/^/mxnet suite: /'
grep -E "^\| w" "$out/bench.md" | cut -c1-160
cat "$out/bandwidth.txt"
