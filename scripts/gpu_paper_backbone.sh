#!/usr/bin/env bash
# One GPU lease's work for issue 39, in one call that ends by itself after SECONDS:
#   1. the GPU and torch, then tests/test_cuda.py (at most TEST_SECONDS);
#   2. the paper's training data (config/paper.yaml's sudoku.data: 100,000 generated solutions), or the
#      file SOLUTIONS names (a copy made on the CPU: uint8 is enough, 8 MB instead of 65);
#   3. the training batch measured, not guessed (benchmarks/gpu_batch_probe.py: steps/s at 256 … 4096);
#   4. sudoku-pretrain at config/paper.yaml's shape (d256, 5 layers, 8 heads; bf16 autocast) with the
#      chosen batch and its square-root-scaled learning rate, for as many steps as fit before the
#      deadline, so the warm-up and cosine schedule run to their end inside the lease; with INIT_FROM (the
#      weights a previous lease brought back) it continues from those weights (a warm restart);
#   5. OUT/model/{model.safetensors,meta.json}: the weights (15.9 MiB in fp32) and their meta, which are
#      also the next lease's resume point (INIT_FROM). A run stopped before its end leaves its last saved
#      training state; its weights are then exported the same way (meta "partial": true).
# Every file under OUT stays below the device tool's 16 MiB and 8-file limits. Evaluation is on the CPU
# afterwards (docs/gpu.md: benchmarks/training_curve.py --test, then export-pretrained).
# Usage (repository root, packages importable):
#     scripts/gpu_paper_backbone.sh OUT [SECONDS] [INIT_FROM]
# A CPU check of the whole script (a few steps):
#     DEVICE=cpu PROBE_BATCHES="8 16" PROBE_SECONDS=1 TEST_SECONDS=5 scripts/gpu_paper_backbone.sh /tmp/lease 60
set -uo pipefail
out=${1:?usage: scripts/gpu_paper_backbone.sh OUT [SECONDS] [INIT_FROM]}
secs=${2:-520}
init=${3:-}
py=${PYTHON:-python}
device=${DEVICE:-cuda}
deadline=$(( $(date +%s) + secs ))
work=${PAPER_WORK:-results/paper-backbone}
model=$work/model
mkdir -p "$out" "$work"
export PYTHONUNBUFFERED=1
log=$out/lease.log
left() { echo $(( deadline - $(date +%s) )); }

{ nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv 2>&1 || echo "no nvidia-smi"
  $py -c "import torch, sys; print('python', sys.version.split()[0], 'torch', torch.__version__, 'cuda', torch.version.cuda)"
} | tee "$log"

echo "== 1. CUDA tests (at most ${TEST_SECONDS:-150} s)" | tee -a "$log"
timeout "${TEST_SECONDS:-150}" $py -m pytest -q -p no:cacheprovider tests/test_cuda.py > "$out/test_cuda.log" 2>&1
echo "test_cuda exit $? ($(tail -n 1 "$out/test_cuda.log"))" | tee -a "$log"

solutions=${SOLUTIONS:-$work/data/train_solutions.npy}
if [ ! -f "$solutions" ]; then
    echo "== 2. data ($work/data)" | tee -a "$log"
    $py -m mdm_mi prepare-sudoku --radcliffe resources/data/sudoku/radcliffe_curated_5000.csv \
        --easy resources/data/sudoku/hkunlp_easy_1k.csv --out-dir "$work/data" --n-train-solutions 100000 \
        --hard-max-puzzles 1000 --easy-max-puzzles 1000 --levels-max-puzzles 1000 \
        --graded-givens 17 20 23 26 29 32 35 --graded-per-level 300 --oracle-max-puzzles 30 --seed 0 \
        >> "$log" 2>&1 || { echo "prepare-sudoku failed" | tee -a "$log"; exit 1; }
fi

echo "== 3. batch probe" | tee -a "$log"
# shellcheck disable=SC2086
$py benchmarks/gpu_batch_probe.py --solutions "$solutions" --out "$out/probe.json" --device "$device" \
    --batches ${PROBE_BATCHES:-256 512 1024 2048 4096} --seconds "${PROBE_SECONDS:-3}" >> "$log" 2>&1 \
    || { echo "batch probe failed" | tee -a "$log"; exit 1; }
read -r batch lr sps < <($py -c "import json; p = json.load(open('$out/probe.json')); print(p['batch'], p['lr'], p['steps_per_s'])")
train_secs=$(( $(left) - 30 ))  # 30 s for start-up, the last save and the export
steps=$($py -c "print(max(1, int($sps * $train_secs * ${STEP_FACTOR:-0.9})))")
warmup=$(( steps / 10 < 1000 ? steps / 10 : 1000 ))
echo "batch $batch, lr $lr, $sps steps/s measured: $steps steps in at most $train_secs s (warm-up $warmup)" | tee -a "$log"

echo "== 4. training" | tee -a "$log"
rm -rf "$model"
pretrain=($py -m mdm_mi sudoku-pretrain --solutions "$solutions" --out "$model"
          --d-model 256 --n-layers 5 --n-heads 8 --ff-mult 4 --dropout 0.0 --hidden-layer -1
          --steps "$steps" --batch-size "$batch" --lr "$lr" --warmup "$warmup" --no-compile --snapshot-every 0
          --weight-decay 0.01 --t-min 0.05 --t-max 1.0 --loss-weight none --augment --grad-clip 1.0
          --log-every 500 --ema 0.0 --save-every "${SAVE_EVERY:-1000}" --device "$device" --seed 0 --threads 4)
[ -n "$init" ] && pretrain+=(--init-from "$init")
echo "${pretrain[*]}" >> "$log"
timeout --signal=TERM $(( train_secs + 15 )) "${pretrain[@]}" > "$out/train.log" 2>&1
echo "sudoku-pretrain exit $? after $(( secs - $(left) )) s of the lease; $(tail -n 1 "$out/train.log")" | tee -a "$log"

echo "== 5. weights" | tee -a "$log"
mkdir -p "$out/model"
if [ -f "$model/meta.json" ]; then
    cp "$model/model.safetensors" "$model/meta.json" "$out/model/"
elif [ -f "$model/resume/train_state.safetensors" ]; then
    $py - "$model/resume/train_state.safetensors" "$out/model" "$init" <<'EOF' 2>&1 | tee -a "$log"
# the last saved training state's parameters as a checkpoint (the run was stopped before its end)
import dataclasses, json, sys
from safetensors import safe_open
from mdm_mi.infra.checkpoint import save_checkpoint
from mdm_mi.sudoku.model import DOMAIN, ModelConfig, SudokuMDM
path, out, init = sys.argv[1], sys.argv[2], sys.argv[3]
with safe_open(path, "pt") as fh:
    meta = json.loads(fh.metadata()["state"])
    params = [fh.get_tensor(k) for k in sorted((k for k in fh.keys() if k.startswith("param.")), key=lambda k: int(k[6:]))]
fp = meta["fingerprint"]
shape = {f.name: fp[f.name] for f in dataclasses.fields(ModelConfig)}
model = SudokuMDM(ModelConfig(**shape))
for p, t in zip(model.parameters(), params):
    p.data.copy_(t)
before = json.load(open(f"{init}/meta.json")).get("total_steps", 0) if init else 0
save_checkpoint(model, out, {"domain": DOMAIN, "model": shape, "train": fp, "partial": True,
                             "total_steps": before + meta["step"], "history": meta["history"],
                             "init_from": init or None})
print(f"exported the training state after step {meta['step']} (stopped before the end)")
EOF
else
    echo "no weights: training saved nothing" | tee -a "$log"; exit 1
fi
ls -la "$out" "$out/model" | tee -a "$log"
