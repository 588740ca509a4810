"""A generated (or natural) set's scores against one protein family, and the family table.

    train, val, reference, summary = read_splits("results/x/protein/data")
    scores = family_scores(seqs, train, val, reference, clusters=15, seed=0)
    rows = family_rows([score_json, ...]); text = family_markdown(rows, "backbone name")

Every score is measured in one frame (:func:`hmm_frame`): a profile HMM built from the training split,
its pass threshold from the validation split, and the reference's match columns realigned to it.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from mdm_mi.infra.errors import InputError
from mdm_mi.infra.io import read_json

REFERENCE_ROWS = ("ceiling", "ardca", "floor")  # natural, ArDCA (the family's own generator), site-independent:
# the table's reference rows, after the samplers; the workflow scores each (FAMILY_ROWS)


def read_splits(data_dir: Path) -> tuple[list, list, list, dict]:
    """prepare-family's train, validation and reference records and its summary (one-line error when
    the folder was not written by prepare-family)."""
    from mdm_mi.protein.family.alignment import SPLIT_NAMES, parse_a2m  # lazy: scipy (~1 s at every CLI start)

    data = Path(data_dir)
    if not (data / "summary.json").is_file():
        raise InputError(f"{data} has no summary.json: run prepare-family first")
    return (*(parse_a2m(data / f"{name}.a2m") for name in SPLIT_NAMES), read_json(data / "summary.json"))


def hmm_threshold(train, val):
    """The profile HMM built from the training split and its pass threshold (1st percentile of the
    validation split's bit scores) → ``(hmm, threshold)``."""
    from mdm_mi.protein.family import metrics as fm# lazy: pyhmmer, scipy (~1 s at every CLI start)

    hmm = fm.build_hmm(train)
    return hmm, fm.score_threshold(fm.hmm_scores(hmm, [r.sequence for r in val]))


def hmm_frame(train, val, reference):
    """What every family score is measured against: :func:`hmm_threshold` and the reference's match
    columns realigned to that HMM → ``(hmm, threshold, reference columns)``."""
    from mdm_mi.protein.family import metrics as fm# lazy: pyhmmer, scipy (~1 s at every CLI start)

    hmm, threshold = hmm_threshold(train, val)
    return hmm, threshold, fm.align_columns(hmm, [r.sequence for r in reference])


def family_scores(seqs: list[str], train, val, reference, clusters: int, seed: int) -> dict:
    """Family scores of protein sequences against the splits (FamilyRecords): HMM bit scores and the
    pass rate at the 1st percentile of the validation split's scores; on the sequences and the
    reference both realigned to the HMM (so gap placement is the same on both sides): f_i r, C_ij r
    on the 20 × 20 residue pairs, corrected-MI r, cluster JSD of one-hot match columns (k-means on
    the reference); the mean fraction of match columns holding a residue (coverage); mean pairwise
    identity; each sequence's highest identity to a (realigned) training sequence, median and max
    (identity counts aligned residues only: a sequence that barely aligns, low coverage, can reach 1)."""
    from mdm_mi.protein.family import metrics as fm# lazy: pyhmmer, scipy (~1 s at every CLI start)
    from mdm_mi.protein.family.alignment import GAP  # lazy: scipy (~1 s at every CLI start)

    hmm, threshold, ref = hmm_frame(train, val, reference)
    scores, cols = fm.hmm_scores(hmm, seqs), fm.align_columns(hmm, seqs)
    nearest = fm.max_identity_to(cols, fm.align_columns(hmm, [r.sequence for r in train]))
    coverage = np.mean([1 - c.count(GAP) / len(c) for c in cols])
    return {"n": len(seqs), "hmm_threshold": threshold, "hmm_pass_rate": fm.pass_rate(scores, threshold),
            "hmm_score_median": float(np.median(scores)), "match_coverage": float(coverage),
            "f_i_r": fm.frequency_r(cols, ref), "c_ij_r": fm.correlation_r(cols, ref, residues_only=True),
            "corrected_mi_r": fm.corrected_mi_r(cols, ref, seed, residues_only=True), "mean_pairwise_identity": fm.mean_pairwise_identity(cols),
            "train_identity_median": float(np.median(nearest)), "train_identity_max": float(nearest.max()),
            **fm.cluster_jsd_columns(ref, cols, clusters, seed)}


# --- the family table ---------------------------------------------------------------------------------

FAMILY_COLUMNS = ["row", "sampler", "setting", "n", "mean_passes", "cluster_jsd", "cluster_jsd_bc", "cluster_jsd_lo",
                  "cluster_jsd_hi", "hmm_pass_rate", "c_ij_r", "f_i_r",
                  "corrected_mi_r", "mean_pairwise_identity", "train_identity_median", "train_identity_max",
                  "match_coverage", "hmm_score_median", "hmm_threshold"]
FAMILY_CAPTION = (
    "Protein family (Pfam A2M) — every row scored at the same number of sequences n against the reference "
    "split, both realigned to a profile HMM built from the training split: cluster JSD (bits) of one-hot match "
    "columns (k-means on the reference), plug-in and bias-corrected [basic bootstrap 95%] (the ceiling's value "
    "is the noise floor: a natural set of the same size); HMM pass rate at the 1st percentile of the validation split's bit "
    "scores; Pearson r with the reference of the connected correlations C_ij (20 × 20 residue pairs), of the "
    "single-site frequencies f_i and of the bias-corrected column-pair MI; diversity (mean pairwise identity) "
    "and memorisation (each sequence's highest identity to a training sequence, median / max, over aligned "
    "residues: read it beside the coverage, the mean fraction of match columns holding a residue). "
    "ceiling: natural training-split sequences (cluster-disjoint from the reference; the HMM was built from "
    "them, so their pass rate is high and their identity to train is 1 by construction); ardca: samples of "
    "ArDCA, an autoregressive Potts model fitted to the training split (Trinquier et al. 2021), the family's "
    "own generator; floor: site-independent draws from the training column profile")


MARKDOWN_HEADER = ["row", "sampler", "setting", "n", "mean passes", "cluster JSD", "bias-corrected [95%]", "HMM pass %", "C_ij r", "f_i r",
                   "corrected-MI r", "mean pairwise identity", "identity to train (median / max)", "coverage"]


def family_rows(scores: list[dict]) -> list[dict]:
    """Score JSONs → table rows: sampler settings by sampler and mean passes, then the reference rows."""
    rows = [{k: s.get(k, "") for k in FAMILY_COLUMNS} for s in scores]
    for r in rows:
        r["mean_passes"] = "" if r["mean_passes"] is None else r["mean_passes"]
    samplers = sorted((r for r in rows if r["row"] not in REFERENCE_ROWS),
                      key=lambda r: (r["sampler"], float(r["mean_passes"] or "nan"), r["setting"]))
    return samplers + [r for name in REFERENCE_ROWS for r in rows if r["row"] == name]


def family_markdown(rows: list[dict], backbone: str) -> str:
    """The family table as Markdown."""

    def num(value, fmt: str) -> str:
        return "—" if value in ("", None) else format(float(value), fmt)

    lines = [f"{FAMILY_CAPTION}; backbone: {backbone}", "", "| " + " | ".join(MARKDOWN_HEADER) + " |",
             "|" + "---|" * len(MARKDOWN_HEADER)]
    for r in rows:
        lines.append(f"| {r['row']} | {r['sampler']} | {r['setting']} | {r['n']} | {num(r['mean_passes'], '.1f')} | "
                     f"{num(r['cluster_jsd'], '.3f')} | {num(r['cluster_jsd_bc'], '.3f')} "
                     f"[{num(r['cluster_jsd_lo'], '.3f')}, {num(r['cluster_jsd_hi'], '.3f')}] | "
                     f"{num(100 * float(r['hmm_pass_rate']), '.1f')} | "
                     f"{num(r['c_ij_r'], '.3f')} | {num(r['f_i_r'], '.3f')} | {num(r['corrected_mi_r'], '.3f')} | "
                     f"{num(r['mean_pairwise_identity'], '.3f')} | {num(r['train_identity_median'], '.2f')} / "
                     f"{num(r['train_identity_max'], '.2f')} | {num(r['match_coverage'], '.2f')} |")
    return "\n".join(lines) + "\n"


def loss_lines(loss: dict) -> str:
    """The family-loss JSON as one Markdown paragraph: the model's loss at each t beside both baselines
    (a column model's: beside the column profile on the same masked columns)."""
    if loss.get("space") == "columns":
        parts = [f"t = {t}: {v['loss_nats']:.3f} (profile {v['profile_nats']:.3f}, {v['vs_profile']:+.3f})"
                 for t, v in loss["losses"].items()]
        return (f"Held-out masked-column loss on the {loss['reference_rows']} reference rows (nats per masked match "
                f"column, 21 letters incl. gap; insertions are not modelled): {'; '.join(parts)}.\n")
    base = loss["baselines"]
    parts = [f"t = {t}: {v['loss_nats']:.3f} ({v['vs_profile']:+.3f} vs the profile)" for t, v in loss["losses"].items()]
    return (f"Held-out masked-token loss on the {loss['reference_sequences']} reference sequences (nats per masked "
            f"residue): {'; '.join(parts)}. Site-independent baselines: column profile {base['profile_nats']:.3f}, "
            f"composition {base['composition_nats']:.3f}.\n")
