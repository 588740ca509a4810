#!/usr/bin/env bash
# The protein comparison again with a second calibration seed (issue 31's two-seed check), on a finished
# run's model, head, embedder and data: the workflow's own protein-compare-part / protein-compare /
# family-compare commands (read from a dry run, so the flags are the config's), each with
# --calib-seed SEED and written under budgets_calib<SEED>/ and family_calib<SEED>/ instead of budgets/ and
# family/. The test decodes keep --seed, so only the calibration (and the settings it picks) changes.
#
#   bash scripts/protein_second_seed.sh                 # config/config.yaml's run, calibration seed 1
#   bash scripts/protein_second_seed.sh config/smoke.yaml 1
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/snakemake ] && PATH="$PWD/.venv/bin:$PATH"  # the README's setup; any snakemake on PATH otherwise
CONFIG=${1:-config/config.yaml}
SEED=${2:-1}
JOBS=${JOBS:-2}
commands=$(snakemake -n -p --nolock --configfile "$CONFIG" --forcerun protein_compare_part protein_compare \
  family_compare -- protein 2>&1 | sed -n 's/^Shell command: \(python -m mdm_mi \(protein-compare-part\|protein-compare\|family-compare\) .*\)/\1/p' |
  sed -e 's/ > logs.*//' -e 's/ --tracking-uri [^ ]*//' -e 's/ --experiment [^ ]*//' -e 's/ --wildcard [^ ]*//g' \
      -e "s#/budgets\\b#/budgets_calib$SEED#g" -e "s#/family\\b#/family_calib$SEED#g")
[ -n "$commands" ] || { echo "error: no protein-compare commands in the dry run of $CONFIG" >&2; exit 2; }
parts=$(grep -e 'protein-compare-part' <<< "$commands" | sed "s/\$/ --calib-seed $SEED/")
merge=$(grep -e 'protein-compare --parts' <<< "$commands" | sed "s/\$/ --calib-seed $SEED/")
family=$(grep -e 'family-compare' <<< "$commands")
echo "$parts" | xargs -P "$JOBS" -I{} bash -c '{} > /dev/null'
bash -c "$merge"
bash -c "$family"
echo "second calibration seed $SEED: $(grep -o -e '--out-dir [^ ]*' <<< "$family")"
out=$(grep -o -e '--out-dir [^ ]*' <<< "$family" | cut -d' ' -f2)
python -m mdm_mi family-verdicts --runs "${out%_calib$SEED}" "$out" --names "calibration seed 0" "calibration seed $SEED" \
  --out "$out/verdicts_two_seeds.md"
echo "side by side: $out/verdicts_two_seeds.md"
