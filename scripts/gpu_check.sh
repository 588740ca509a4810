#!/usr/bin/env bash
# The checks that need a CUDA GPU, in one go, each step's log written to OUTDIR:
#   1. tests/test_cuda.py: model, labeller, head, samplers, bf16 training and bf16 ESM-C on the GPU
#      agree with the CPU and keep the decoding properties (CI has no GPU: it skips them);
#   2. the Sudoku part of config/gpu.yaml through Snakemake (`snakemake sudoku`), timed;
#   3. the benchmarks on that GPU-trained model: head overhead, exact vs certified labelling,
#      sampler throughput.
# Usage (in the repository root, with the project's packages installed):
#     scripts/gpu_check.sh [OUTDIR] [extra snakemake arguments...]
# Extra arguments go to snakemake, e.g. `--configfile config/gpu.yaml my-tracking.yaml`.
set -uo pipefail
out=${1:-results/gpu-check}
shift || true
mkdir -p "$out"
export PYTHONUNBUFFERED=1
status=0

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$out/gpu.txt"
python -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda)" | tee -a "$out/gpu.txt"

echo "== 1. CUDA tests"
python -m pytest -q -p no:cacheprovider tests/test_cuda.py 2>&1 | tee "$out/test_cuda.log" || status=1

echo "== 2. snakemake sudoku (config/gpu.yaml)"
start=$(date +%s)
snakemake sudoku --cores "$(nproc)" --resources gpu=8 --configfile config/gpu.yaml "$@" \
    > "$out/snakemake.log" 2>&1
rc=$?
[ $rc -eq 0 ] || status=1
echo "snakemake sudoku: exit $rc after $(( $(date +%s) - start )) s" | tee -a "$out/snakemake.log"
tail -n 5 "$out/snakemake.log"

model=results/gpu/sudoku/model
if [ -f "$model/meta.json" ]; then
    echo "== 3. benchmarks on $model"
    python benchmarks/bench_head.py --checkpoint "$model" --batch 1000 --device cuda \
        2>&1 | tee "$out/bench_head.log" || status=1
    python benchmarks/bench_labeller.py --checkpoint "$model" --contexts 60 --device cuda \
        2>&1 | tee "$out/bench_labeller.log" || status=1
    if [ -f results/gpu/sudoku/head/meta.json ]; then
        python benchmarks/bench_samplers.py --checkpoint "$model" --head results/gpu/sudoku/head \
            --puzzles results/gpu/sudoku/data/hard.csv --n 1000 --batch 1000 --device cuda \
            2>&1 | tee "$out/bench_samplers.log" || status=1
    fi
fi
exit $status
