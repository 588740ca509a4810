#!/usr/bin/env bash
# The pre-registered AntiBERTy run (config/decisive_antibody.yaml, ~11-13 h on 2 CPU cores) spread over
# sessions whose results/ does not survive: `save` copies what the run has made so far (labels, head,
# its fidelity, the split, every decoded chunk; not the 97 MB backbone, which import-antiberty rebuilds
# the same from the wheel) into resources/resume/decisive-antibody/ to be committed; `restore` rebuilds
# the backbone, puts the saved files back and marks them up to date, so that
#     snakemake --cores 2 --configfile config/decisive_antibody.yaml -- decisive_antibody
# goes on where the last session stopped (antibody-compare reads its finished chunks back: their keys
# hold the backbone's and the head's fingerprints, so a retrained head would start over, not mix).
#     bash scripts/decisive_antibody_state.sh save      # after stopping the run (kill its snakemake)
#     bash scripts/decisive_antibody_state.sh restore   # in a fresh checkout, before the command above
set -euo pipefail
cd "$(dirname "$0")/.."
RUN=results/decisive-antibody
LOGS=logs/decisive-antibody  # the jobs' logs and benchmark files: the run's cost, summed over sessions
KEEP=resources/resume/decisive-antibody
CONFIG=(--configfile config/decisive_antibody.yaml)
case "${1:-}" in
  save)
    [ -d "$RUN/hf/head" ] || { echo "decisive_antibody_state: $RUN/hf/head missing: nothing worth saving yet" >&2; exit 1; }
    mkdir -p "$KEEP"
    rm -rf "$KEEP.new" && mkdir -p "$KEEP.new"
    # everything the run made but the backbone; never a half-written file (atomic writes leave
    # .<name>.<pid>.<random>.tmp until they rename), with the files' times (tar keeps them)
    mkdir -p "$KEEP.new/results" "$KEEP.new/logs"
    tar -C "$RUN" --exclude=./hf/model --exclude='*.tmp' -cf - . | tar -C "$KEEP.new/results" -xf -
    [ ! -d "$LOGS" ] || tar -C "$LOGS" -cf - . | tar -C "$KEEP.new/logs" -xf -
    rm -rf "$KEEP" && mv "$KEEP.new" "$KEEP"
    echo "saved $(find "$KEEP" -type f | wc -l) files, $(du -sh "$KEEP" | cut -f1), into $KEEP"
    ;;
  restore)
    [ -d "$KEEP" ] || { echo "decisive_antibody_state: no saved state in $KEEP" >&2; exit 1; }
    snakemake --cores 2 "${CONFIG[@]}" -- "$RUN/hf/model/meta.json"  # the backbone, from the wheel
    mkdir -p "$LOGS"
    tar -C "$KEEP/results" -cf - . | tar -C "$RUN" -xf -
    tar -C "$KEEP/logs" -cf - . | tar -C "$LOGS" -xf -
    # the saved outputs are the truth: mark every job up to the head (and its fidelity) as done
    snakemake --cores 1 --touch "${CONFIG[@]}" -- "$RUN/hf/head_fidelity.json" > /dev/null
    echo "restored $(find "$KEEP" -type f | wc -l) files into $RUN; now run the decisive_antibody target"
    ;;
  *)
    echo "usage: bash scripts/decisive_antibody_state.sh save|restore" >&2; exit 2 ;;
esac
