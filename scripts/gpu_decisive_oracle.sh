#!/usr/bin/env bash
# The pre-registered Sudoku run's MI-oracle ceiling (issue 48; issue 50 item 1) on one lent GPU: the
# command rule sudoku_oracle_ceiling runs under config/decisive_sudoku.yaml, with --device cuda. On 2 CPU
# cores it takes hours (1 + |M|·9 probing passes at every step of 300 puzzles at ÷4 and ÷12).
#
# It reads the committed comparison (docs/data/decisive-sudoku/sudoku/budgets/hard: runs.json, outcomes.npz,
# test.csv) and the shipped backbone (resources/pretrained/sudoku-paper, the weights the run imported), so
# the device call needs no carry:
#     bash scripts/gpu_decisive_oracle.sh $OUT
# brings back ceiling.json, ceiling.md and the log in $OUT; copy them to
# results/decisive-sudoku/sudoku/ceiling/hard/ and commit them with scripts/commit_run_data.py.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: gpu_decisive_oracle.sh OUT_DIR}
model=resources/pretrained/sudoku-paper
compare=docs/data/decisive-sudoku/sudoku/budgets/hard
py=${PYTHON:-python3}
for f in "$model/meta.json" "$compare/runs.json" "$compare/outcomes.npz" "$compare/test.csv"; do
    [ -f "$f" ] || { echo "error: $f missing"; exit 2; }
done
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
start=$(date +%s)
PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/src${PYTHONPATH:+:$PYTHONPATH} "$py" -m mdm_mi sudoku-oracle-ceiling \
    --model "$model" --compare-dir "$compare" --out-dir "$out" --puzzles 300 --divisors 4 12 \
    --tol 0.001 --batch-size 100 --chunks "$out/chunks" --device cuda --seed 0 --threads 4 --tracking-uri none \
    2>&1 | tee "$out/oracle.log"
echo "wall seconds: $(( $(date +%s) - start ))" | tee -a "$out/oracle.log"
rm -rf "$out/chunks"  # many small files: they do not come back (at most 8 files), and the run is done
