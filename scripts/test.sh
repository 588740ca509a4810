#!/usr/bin/env bash
# Set up the environment (if needed) and run the whole test suite: lint and dry runs of the
# workflow, then every test (unit tests and the end-to-end runs, the smoke DAG first) on two pytest
# workers (pytest-xdist; TEST_WORKERS=1 for one) that steal each other's queued tests, so neither
# idles while the other still holds several slow ones. Timings: docs/benchmarks.md.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
. .venv/bin/activate
snakemake --lint --configfile config/smoke.yaml > /dev/null
snakemake -n --quiet --configfile config/paper.yaml > /dev/null
pytest -q -n "${TEST_WORKERS:-2}" --dist worksteal "$@"
