"""The calibrated fallbacks of a shipped protein backbone that no comparison has calibrated yet: each
calibrated user sampler searched to sequential's passes ÷ ``--at`` on the calibration rows of
``protein-compare`` (``calib_n`` rows drawn with the calibration seed, decoded at the config's
temperature; a column model's rows all have its L columns), counting passes only (the comparison
also scores each calibration set's JSD, which the search does not read). ``mi`` reads the exact
probing MI (``mi-oracle``'s matrix) in place of an MI head, which is not shipped.

    python benchmarks/calibrate_shipped.py --model resources/pretrained/protein-kunitz-columns --at 3

Prints one JSON object: the ``calibrated`` block of the backbone's MANIFEST.json (sampler → params).
"""

from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np
import torch

from mdm_mi.evaluation.calibrate import calibrate_grid, calibrated_families
from mdm_mi.models.loading import load_model
from mdm_mi.mi.guided import oracle_pairwise_fn
from mdm_mi.protein.decode_flags import DecodeFlags
from mdm_mi.protein.generate import generate
from mdm_mi.sampling.registry import SAMPLER_CLASSES


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--at", type=int, default=3)
    ap.add_argument("--calib-n", type=int, default=64, help="config.yaml protein.compare.calib_n")
    ap.add_argument("--temperature", type=float, default=1.0, help="config.yaml protein.generate.temperature")
    ap.add_argument("--samplers", nargs="+", default=["naive", "eb", "threshold", "mi"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    backbone, _ = load_model(args.model, "cpu", "protein")
    length = int(backbone.fixed_length)
    lengths = np.full(args.calib_n, length)
    decoding = DecodeFlags(temperature=args.temperature)
    oracle = oracle_pairwise_fn(backbone, method="certified", tol=1e-3)

    def measure(sampler):
        gen = torch.Generator().manual_seed(args.seed)
        _, passes = generate(backbone, lengths, sampler, gen, decoding=decoding,
                             pairwise_fn=oracle if sampler.uses_pairwise else None)
        return float(passes.mean()), {}

    settings = {"mi_lambda": (1.0,), "mi_on_reject": "skip", "mi_charge_first": False}
    families = [f for f in calibrated_families(length, settings, SAMPLER_CLASSES) if f.sampler in args.samplers]
    begin = time.time()
    points = calibrate_grid(families, float(length), (args.at,), measure, log=lambda s: print(s, file=sys.stderr))
    by_label = {f.label: f for f in families}
    block = {by_label[p.family].sampler: by_label[p.family].build(p.value).params() for p in points}
    print(json.dumps({"at": args.at, "samplers": block, "passes": {p.family: p.passes for p in points},
                      "seconds": round(time.time() - begin, 1)}, indent=1))


if __name__ == "__main__":
    main()
