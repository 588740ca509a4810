#!/usr/bin/env bash
# Prepare, on the CPU machine, what a GPU lease's call carries (issue 39), so that no device time goes
# to generating data: the paper's 100,000 training grids as uint8 (8 MB instead of 65: the device tool
# carries at most 64 MiB with the tree) in gpu_carry/, and the Python packages the GPU image lacks
# (jsonschema and its deps; esm for the ESM-C CUDA tests) as Python 3.12 wheels in .whl/. Both folders
# are git-ignored through .git/info/exclude. Then, in one device call (docs/gpu.md):
#     python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
#         .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD/src || exit; PYTHON=python3 \
#         SOLUTIONS=gpu_carry/train_solutions_u8.npy scripts/gpu_paper_backbone.sh $OUT 530 resources/pretrained/sudoku-paper
# with carry [".whl", "gpu_carry"].
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-.venv/bin/python}
data=results/paper-backbone/data
for d in /gpu_carry/ /.whl/; do grep -qxF "$d" .git/info/exclude 2>/dev/null || echo "$d" >> .git/info/exclude; done
if [ ! -f "$data/train_solutions.npy" ]; then
    "$py" -m mdm_mi prepare-sudoku --radcliffe resources/data/sudoku/radcliffe_curated_5000.csv \
        --easy resources/data/sudoku/hkunlp_easy_1k.csv --out-dir "$data" --n-train-solutions 100000 \
        --hard-max-puzzles 1000 --easy-max-puzzles 1000 --levels-max-puzzles 1000 \
        --graded-givens 17 20 23 26 29 32 35 --graded-per-level 300 --oracle-max-puzzles 30 --seed 0
fi
mkdir -p gpu_carry .whl
"$py" -c "import numpy as np; np.save('gpu_carry/train_solutions_u8.npy', np.load('$data/train_solutions.npy').astype(np.uint8))"
platforms="--platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64"
for pkg in esm==3.2.1.post1 jsonschema==4.26.0 jsonschema-specifications referencing rpds-py cloudpathlib==0.26.0 \
           msgpack-numpy==0.4.8 brotli==1.2.1; do
    # shellcheck disable=SC2086
    "$py" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp $platforms -d .whl "$pkg"
done
du -sh gpu_carry .whl
