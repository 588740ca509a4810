#!/usr/bin/env bash
# Set up the environment (if needed) and run the whole test suite: lint and dry runs of the
# workflow, unit tests, then the smoke DAG end to end (pytest -m slow). ~10 minutes on 2 cores.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. .venv/bin/activate
snakemake --lint --configfile config/smoke.yaml > /dev/null
snakemake -n --quiet --configfile config/paper.yaml > /dev/null
pytest -q "$@"
