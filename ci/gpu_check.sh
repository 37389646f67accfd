#!/usr/bin/env bash
# One short check on a GPU machine: GPU tests, then the GPU benchmarks,
# then a short table. Usage (on the device machine, repo root): bash ci/gpu_check.sh
# Writes everything under ${OUT:-/tmp/gpu_check}; needs cupy (cupy-cuda12x/13x) installed.
set -u
out="${OUT:-/tmp/gpu_check}"
mkdir -p "$out"
export GPUNDA_DEFAULT_DEVICE=gpu
python -c "import cupy, sys; print('cupy', cupy.__version__, 'devices', cupy.cuda.runtime.getDeviceCount())" \
    2>&1 | tee "$out/cupy.txt"
pip install -q -e . >/dev/null 2>&1 || pip install -q --no-deps -e . >/dev/null 2>&1
python -m gpunda info 2>&1 | tee "$out/info.txt"
# 1. GPU tests: the gpu-marked ones, then the op suites on the GPU default device
timeout 240 python -m pytest -q -m gpu -p no:cacheprovider 2>&1 | tail -25 | tee "$out/pytest_gpu.txt"
timeout 200 python -m pytest -q -x -p no:cacheprovider tests/ops tests/test_autograd.py \
    tests/test_cached_op.py tests/test_model_fixtures.py 2>&1 | tail -15 | tee "$out/pytest_default_gpu.txt"
# 2. GPU benchmarks (gpunda on CuPy vs PyTorch CUDA), short rounds
timeout 240 python -m bench --device gpu --frameworks numpy,gpunda,torch --cases w1,w2,w3,w4,w5,w7 \
    --rounds 3 --block-seconds 0.1 --out "$out/bench" 2>"$out/bench.err" | tee "$out/bench.md"
# 3. the short table, last
echo
echo "== GPU check summary =="
grep -hE "passed|failed|error" "$out"/pytest_*.txt | sed 's/^/tests: /'
grep -E "^\| w" "$out/bench.md" | cut -c1-160
