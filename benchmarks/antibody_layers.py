"""Which AntiBERTy layer should the MI head read? The labels do not depend on the layer (they are the
model's conditionals), so one set of label shards trains one head per layer, with the head and
training settings of the config; the layer is chosen on the val split and the test split is reported.

    python benchmarks/antibody_layers.py --config config/antibody.yaml --layers 2 4 6 -1 \
        --out docs/benchmarks/antibody_layers.json

Reads ``results/<name>/hf/{model,labels}`` of the config's run (``snakemake antibody`` writes them).
Prints one line per layer: val and test Pearson / Spearman, MAE, and the test Pearson on the contexts
whose masks lie inside CDR-H3, inside the three CDRs, or reach the framework.
"""

from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import torch
from safetensors.torch import load_file

from mdm_mi.antibody.data import CDRS, read_vh
from mdm_mi.infra.config import load_config
from mdm_mi.models.loading import load_model
from mdm_mi.mi.contexts import load_label_shards
from mdm_mi.mi.fidelity import fidelity
from mdm_mi.mi.head import HeadConfig, HeadTrainConfig, backbone_features, train_head

FEATURE_BATCH = 64


def scope_of(rows, sequence_rows: torch.Tensor, masked: torch.Tensor) -> list[str]:
    """Per context: ``cdr3`` (masks inside CDR-H3), ``cdrs`` (inside the CDRs) or ``framework``."""
    out = []
    for r, m in zip(sequence_rows.tolist(), masked):
        vh = rows[r]
        where = set()
        for pos in (m.nonzero().flatten() - 1).tolist():  # token = residue + 1 (CLS first)
            where.add(next((c for c in CDRS if vh.span(c)[0] <= pos < vh.span(c)[1]), "framework"))
        out.append("cdr3" if where <= {"cdr3"} else "cdrs" if "framework" not in where else "framework")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--config", default="config/antibody.yaml")
    ap.add_argument("--layers", type=int, nargs="+", default=[2, 4, 6, -1])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    cfg = load_config(a.config)
    mi = cfg["hf"]["mi"]
    run = Path("results") / cfg["name"] / "hf"
    files = {s: sorted((run / "labels" / s).glob("shard*.safetensors")) for s in ("train", "val", "test")}
    shards = {s: load_label_shards(paths) for s, paths in files.items()}
    test_rows = read_vh(run / "data" / "test.tsv")
    backbone, _ = load_model(run / "model", "cpu")
    head_cfg = HeadConfig(mi["head"]["hidden"], mi["head"]["heads"], mi["head"]["rank"], mi["head"]["unary"],
                          mi["head"]["distance_buckets"])
    ht = mi["head_train"]
    train_cfg = HeadTrainConfig(ht["steps"], ht["batch_size"], ht["lr"], ht["weight_decay"], cfg["seed"])
    test_seq_rows = torch.cat([load_file(str(p))["sequence_row"] for p in files["test"]])
    scopes = scope_of(test_rows, test_seq_rows, shards["test"]["masked"])
    results = {}
    for layer in a.layers:
        backbone.hidden_layer = layer
        t0 = time.time()
        feats = {s: backbone_features(backbone, d["contexts"], FEATURE_BATCH).clone() for s, d in shards.items()}
        tr = shards["train"]
        head, _ = train_head(feats["train"], tr["label"], tr["masked"], train_cfg, head_cfg)
        row = {}
        with torch.inference_mode():
            for s in ("val", "test"):
                pred = head(feats[s], shards[s]["masked"])
                row[s] = fidelity(pred, shards[s]["label"], shards[s]["masked"])
                if s == "test":
                    for sc in ("cdr3", "cdrs", "framework"):
                        idx = torch.tensor([k for k, x in enumerate(scopes) if x == sc], dtype=torch.long)
                        if len(idx):
                            f = fidelity(pred[idx], shards[s]["label"][idx], shards[s]["masked"][idx])
                            row[f"test_{sc}"] = {"contexts": len(idx), "pairs": f["pairs"], "pearson": f["pearson"]}
        row["seconds"] = time.time() - t0
        results[str(layer)] = row
        print(f"layer {layer}: val Pearson {row['val']['pearson']:.3f} Spearman {row['val']['spearman']:.3f}; "
              f"test Pearson {row['test']['pearson']:.3f} Spearman {row['test']['spearman']:.3f} MAE {row['test']['mae']:.4f}; "
              + ", ".join(f"{k} {v['pearson']:.3f} ({v['contexts']} ctx)" for k, v in row.items() if k.startswith("test_"))
              + f" [{row['seconds']:.0f} s]", flush=True)
    best = max(results, key=lambda k: results[k]["val"]["pearson"])
    print(f"chosen on val: layer {best} (test Pearson {results[best]['test']['pearson']:.3f})")
    if a.out:
        a.out.write_text(json.dumps({"layers": results, "chosen_on_val": best, "cpu": platform.processor(),
                                     "config": a.config}, indent=1))


if __name__ == "__main__":
    main()
