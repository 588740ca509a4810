#!/usr/bin/env bash
# The pre-registered AntiBERTy run (config/decisive_antibody.yaml, ~11 h on 2 CPU cores by amendment 2's estimate) spread over
# sessions whose results/ does not survive: `save` copies what the comparison needs to go on (the split,
# the trained head and its fidelity, every decoded chunk, the jobs' logs) into
# resources/resume/decisive-antibody/ to be committed. Not the 97 MB backbone (import-antiberty rebuilds
# it the same from the wheel) and not the MI labels (20 MB; the head is made from them, and nothing
# after it reads them). `restore` rebuilds the backbone and puts the saved files back; then
#     snakemake --cores 2 --configfile config/decisive_antibody.yaml \
#         --allowed-rules antibody_compare decisive_antibody -- decisive_antibody
# goes on where the last session stopped: --allowed-rules keeps the saved head (without its labels,
# snakemake would otherwise relabel and retrain it), and antibody-compare reads its finished chunks
# back (their keys hold the backbone's and the head's fingerprints, so another head would start over,
# not mix).
#     bash scripts/decisive_antibody_state.sh save      # after stopping the run (kill its snakemake)
#     bash scripts/decisive_antibody_state.sh restore   # in a fresh checkout, before the command above
set -euo pipefail
cd "$(dirname "$0")/.."
RUN=results/decisive-antibody
LOGS=logs/decisive-antibody  # the jobs' logs and benchmark files: the run's cost, summed over sessions
KEEP=resources/resume/decisive-antibody  # its outputs/ and joblogs/ (.gitignore leaves out results/ and logs/)
CONFIG=(--configfile config/decisive_antibody.yaml)
case "${1:-}" in
  save)
    [ -d "$RUN/hf/head" ] || { echo "decisive_antibody_state: $RUN/hf/head missing: nothing worth saving yet" >&2; exit 1; }
    mkdir -p "$KEEP"
    rm -rf "$KEEP.new" && mkdir -p "$KEEP.new"
    # never a half-written file (atomic writes leave .<name>.<pid>.<random>.tmp until they rename)
    mkdir -p "$KEEP.new/outputs" "$KEEP.new/joblogs"
    tar -C "$RUN" --exclude=./hf/model --exclude=./hf/labels --exclude='./hf/data/*_contexts*' --exclude='*.tmp' -cf - . | tar -C "$KEEP.new/outputs" -xf -
    [ ! -d "$LOGS" ] || tar -C "$LOGS" -cf - . | tar -C "$KEEP.new/joblogs" -xf -
    rm -rf "$KEEP" && mv "$KEEP.new" "$KEEP"
    echo "saved $(find "$KEEP" -type f | wc -l) files, $(du -sh "$KEEP" | cut -f1), into $KEEP"
    ;;
  restore)
    [ -d "$KEEP" ] || { echo "decisive_antibody_state: no saved state in $KEEP" >&2; exit 1; }
    snakemake --cores 2 "${CONFIG[@]}" -- "$RUN/hf/model/meta.json"  # the backbone, from the wheel
    mkdir -p "$LOGS"
    tar -C "$KEEP/outputs" -cf - . | tar -C "$RUN" -xf -
    tar -C "$KEEP/joblogs" -cf - . | tar -C "$LOGS" -xf -
    echo "restored $(find "$KEEP" -type f | wc -l) files into $RUN; now run:"
    echo "  snakemake --cores 2 ${CONFIG[*]} --allowed-rules antibody_compare decisive_antibody -- decisive_antibody"
    ;;
  *)
    echo "usage: bash scripts/decisive_antibody_state.sh save|restore" >&2; exit 2 ;;
esac
