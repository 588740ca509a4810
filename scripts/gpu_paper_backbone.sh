#!/usr/bin/env bash
# The paper-scale Sudoku backbone on one GPU (issue 26, item 6), in steps that fit a short device
# lease and resume where the last call stopped:
#   1. the paper's training data (config/paper.yaml's sudoku.data: 100,000 generated solutions);
#   2. sudoku-pretrain at config/paper.yaml's shape and schedule (d256, 5 layers, batch 256, lr 1e-3,
#      warm-up 1,000, a snapshot every 5,000 steps; bf16 autocast on the GPU), STEPS steps (the
#      paper config's 50,000 unless given), stopped after TRAIN_SECONDS and resumed by the next call
#      from MODEL/resume (a killed run continues, it does not restart);
#   3. once training has finished: sequential greedy accuracy of every snapshot on the hard
#      calibration puzzles and of the final weights on the hard and easy test splits of
#      config/config.yaml, paired with the shipped CPU backbone (benchmarks/training_curve.py);
#   4. the weights as a shippable folder, OUT/sudoku-paper (export-pretrained: MANIFEST with sha256
#      and the command), to be copied to resources/pretrained/sudoku-paper.
# Usage (repository root, packages installed):
#     scripts/gpu_paper_backbone.sh OUT [STEPS] [TRAIN_SECONDS] [DEVICE]
# e.g. on a 15-minute lease: `scripts/gpu_paper_backbone.sh $OUT 30000 420`, then the same command
# again at once if it printed "training not finished". A CPU smoke run:
#     PAPER_WORK=/tmp/paper-work PAPER_EVAL_CONFIG=config/smoke.yaml scripts/gpu_paper_backbone.sh /tmp/paper 20 600 cpu
# (STEPS < 5000 gives no snapshots, so no curve; smoke.yaml's test split is 8 hard puzzles.)
set -uo pipefail
out=${1:?usage: scripts/gpu_paper_backbone.sh OUT [STEPS] [TRAIN_SECONDS] [DEVICE]}
steps=${2:-50000}
secs=${3:-480}
device=${4:-cuda}
work=${PAPER_WORK:-results/paper-backbone}
data=$work/data
model=$work/model
sudoku_data=resources/data/sudoku
mkdir -p "$out" "$work"
export PYTHONUNBUFFERED=1

if [ ! -f "$data/summary.json" ]; then
    echo "== 1. data ($data)"
    python -m mdm_mi sudoku-data --radcliffe "$sudoku_data/radcliffe_curated_5000.csv" \
        --easy "$sudoku_data/hkunlp_easy_1k.csv" --out-dir "$data" --n-train-solutions 100000 \
        --hard-max-puzzles 1000 --easy-max-puzzles 1000 --levels-max-puzzles 1000 \
        --graded-givens 17 20 23 26 29 32 35 --graded-per-level 300 --oracle-max-puzzles 30 --seed 0 \
        > "$out/data.log" 2>&1 || { echo "sudoku-data failed: $out/data.log"; exit 1; }
fi

pretrain=(python -m mdm_mi sudoku-pretrain --solutions "$data/train_solutions.npy" --out "$model"
          --d-model 256 --n-layers 5 --n-heads 8 --ff-mult 4 --dropout 0.0 --hidden-layer -1
          --steps "$steps" --batch-size 256 --lr 0.001 --warmup 1000 --no-compile --snapshot-every 5000
          --weight-decay 0.01 --t-min 0.05 --t-max 1.0 --loss-weight none --augment --grad-clip 1.0
          --log-every 100 --ema 0.0 --save-every 250 --device "$device" --seed 0 --threads 4)
if [ ! -f "$model/meta.json" ]; then
    echo "== 2. training ${steps} steps, at most ${secs} s this call"
    timeout --signal=TERM "$secs" "${pretrain[@]}" >> "$out/train.log" 2>&1
    rc=$?
    tail -n 2 "$out/train.log"
    if [ ! -f "$model/meta.json" ]; then
        [ $rc -eq 124 ] && { echo "training not finished: run the same command again to resume"; exit 3; }
        echo "sudoku-pretrain failed (exit $rc): $out/train.log"; exit 1
    fi
fi

echo "== 3. accuracy against steps and on the test splits"
python benchmarks/training_curve.py --model "$model" --out "$out/paper_training_curve" --test \
    --config "${PAPER_EVAL_CONFIG:-config/config.yaml}" \
    --baseline resources/pretrained/sudoku --device "$device" --threads 4 \
    > "$out/curve.log" 2>&1 || { echo "training_curve failed: $out/curve.log"; exit 1; }
tail -n 1 "$out/curve.log"

echo "== 4. export"
python - "$out" "$steps" "${pretrain[*]}" <<'EOF'
import json, sys
out, steps, command = sys.argv[1], int(sys.argv[2]), sys.argv[3]
test = json.load(open(f"{out}/paper_training_curve.json"))
about = {"name": f"sudoku-paper-{steps}", "seed": 0, "command": command,
         "config": "config/paper.yaml's sudoku.model and sudoku.train, with --steps as given",
         "made_by": "scripts/gpu_paper_backbone.sh on a lent GPU",
         "evaluation": {"source": "benchmarks/training_curve.py --test (greedy sequential, entropy order, "
                                  "config/config.yaml's test splits)",
                        "hard_sequential_accuracy": test["final_test"]["hard"]["accuracy"],
                        "easy_sequential_accuracy": test["final_test"]["easy"]["accuracy"],
                        "paired_with_shipped_cpu_backbone": test["paired"]}}
json.dump(about, open(f"{out}/about.json", "w"), indent=2)
EOF
python -m mdm_mi export-pretrained --model "$model" --data "$data/train_solutions.npy" \
    --out "$out/sudoku-paper" --about "$out/about.json" > "$out/export.log" 2>&1 \
    || { echo "export-pretrained failed: $out/export.log"; exit 1; }
echo "shipped folder: $out/sudoku-paper (copy to resources/pretrained/sudoku-paper)"
