#!/usr/bin/env bash
# The CUDA checks of issue 22 in one run, on a machine with an NVIDIA GPU: the parity tests
# (tests/test_cuda.py: every bundled model's numbers on the GPU against the CPU's, within 1e-4;
# cached = uncached decoding), then the engine, decoding and analysis benchmarks on CUDA.
# Run: bash bench/cuda_checks.sh OUTDIR   (docs/benchmarks.md, "On a GPU", reports what it wrote)
set -uo pipefail
cd "$(dirname "$0")/.."
out=${1:-bench/results/cuda}
mkdir -p "$out"
export PYTHONUNBUFFERED=1
py=${PYTHON:-python3}
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$out/gpu.txt"
$py -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)" | tee -a "$out/gpu.txt"
$py -m pytest -q -s tests/test_cuda.py 2>&1 | tee "$out/tests_cuda.log"
$py bench/bench_engine.py --device cuda --rounds 15 --calls 5 --out "$out/engine_cuda.json" 2>&1 | grep -v Warning
$py bench/bench_engine.py --device cuda --d-model 768 --heads 12 --layers 12 --d-ff 3072 --lengths 128 512 \
  --padded-lengths 128 --rounds 10 --calls 3 --out "$out/engine_cuda_bert.json" 2>&1 | grep -v Warning
$py bench/bench_decoding.py --device cuda --rounds 5 --out "$out/decoding_cuda.json"
$py bench/bench_analyze.py --device cuda 2>&1 | tee "$out/analyze_cuda.txt"
