#!/usr/bin/env bash
# The pre-registered Sudoku run's MI-oracle ceiling (issue 48; issue 50 item 1) on one lent GPU: the
# command rule sudoku_oracle_ceiling runs under config/decisive_sudoku.yaml, with --device cuda. On 2 CPU
# cores it takes hours (1 + |M|·9 probing passes at every step of 300 puzzles at ÷4 and ÷12).
#
# Prepared on the CPU machine after `snakemake --cores 2 --configfile config/decisive_sudoku.yaml
# results/decisive-sudoku/sudoku/budgets/hard/budgets.md` (the comparison the oracle reads). One device call,
# with carry ["results/decisive-sudoku/sudoku/model", "results/decisive-sudoku/sudoku/budgets/hard"]:
#     bash scripts/gpu_decisive_oracle.sh $OUT
# brings back ceiling.json, ceiling.md and the log in $OUT; copy them to
# results/decisive-sudoku/sudoku/ceiling/hard/ and commit them with scripts/commit_run_data.py.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: gpu_decisive_oracle.sh OUT_DIR}
root=results/decisive-sudoku/sudoku
py=${PYTHON:-python3}
for f in "$root/model/meta.json" "$root/budgets/hard/runs.json" "$root/budgets/hard/outcomes.npz" "$root/budgets/hard/test.csv"; do
    [ -f "$f" ] || { echo "error: $f missing: carry the decisive comparison's folders (see this script's header)"; exit 2; }
done
nvidia-smi --query-gpu=name,memory.total --format=csv,noheader || true
start=$(date +%s)
PYTHONUNBUFFERED=1 PYTHONPATH=$PWD/src${PYTHONPATH:+:$PYTHONPATH} "$py" -m mdm_mi sudoku-oracle-ceiling \
    --model "$root/model" --compare-dir "$root/budgets/hard" --out-dir "$out" --puzzles 300 --divisors 4 12 \
    --tol 0.001 --batch-size 100 --chunks "$out/chunks" --device cuda --seed 0 --threads 4 --tracking-uri none \
    2>&1 | tee "$out/oracle.log"
echo "wall seconds: $(( $(date +%s) - start ))" | tee -a "$out/oracle.log"
rm -rf "$out/chunks"  # many small files: they do not come back (at most 8 files), and the run is done
