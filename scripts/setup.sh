#!/usr/bin/env bash
# Create .venv with the pinned dependencies and the package (idempotent; Python 3.11).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3.11}
command -v "$PY" > /dev/null || PY=python3
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
# torch first and pinned: on a machine with the CPU wheel on disk this installs nothing from the net
.venv/bin/python -m pip install --quiet "torch==2.13.0"
.venv/bin/python -m pip install --quiet -e ".[test]"
# ESM-C: esm without its declared deps (torchvision/torchtext are unused by ESMC and break here);
# its real runtime deps are pinned in pyproject.toml
.venv/bin/python -m pip install --quiet --no-deps "esm==3.2.1.post1"
