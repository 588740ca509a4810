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
#
# On CPU, over sessions whose results/ does not survive: the decoded chunks (100 puzzles each, a few kB)
# go to a committed folder, so each session resumes where the last stopped (stop it with kill; at most
# the chunk under way is lost):
#     DEVICE=cpu CHUNKS=resources/resume/decisive-sudoku-oracle THREADS=2 \
#         bash scripts/gpu_decisive_oracle.sh results/decisive-sudoku/sudoku/ceiling/hard
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: gpu_decisive_oracle.sh OUT_DIR}
model=resources/pretrained/sudoku-paper
compare=docs/data/decisive-sudoku/sudoku/budgets/hard
py=${PYTHON:-python3}
device=${DEVICE:-cuda}
chunks=${CHUNKS:-$out/chunks}  # the default is removed at the end; a folder given in CHUNKS is kept
threads=${THREADS:-4}
mkdir -p "$out"
for f in "$model/meta.json" "$compare/runs.json" "$compare/outcomes.npz" "$compare/test.csv"; do
    [ -f "$f" ] || { echo "error: $f missing"; exit 2; }
done
[ "$device" = cpu ] || nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
start=$(date +%s)
PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/src${PYTHONPATH:+:$PYTHONPATH} "$py" -m mdm_mi sudoku-oracle-ceiling \
    --model "$model" --compare-dir "$compare" --out-dir "$out" --puzzles 300 --divisors 4 12 \
    --tol 0.001 --batch-size 100 --chunks "$chunks" --device "$device" --seed 0 --threads "$threads" --tracking-uri none \
    2>&1 | tee -a "$out/oracle.log"
echo "wall seconds: $(( $(date +%s) - start ))" | tee -a "$out/oracle.log"
[ -n "${CHUNKS:-}" ] || rm -rf "$out/chunks"  # many small files: they do not come back (at most 8 files), and the run is done
