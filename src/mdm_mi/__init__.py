"""mdm-mi: neural estimation of pairwise mutual information in masked discrete sequence models.

Reference implementation of arXiv 2605.20187. Entry point: ``python -m mdm_mi <verb> --help``.

The public Python API is the names of :data:`__all__`, imported on first use (so that ``import
mdm_mi`` stays cheap, and the workflow's config reader never loads torch)::

    import mdm_mi
    backbone, head = mdm_mi.load_model_and_head("byom/hf_model", "byom/head")
    out = mdm_mi.decode(backbone, start, mdm_mi.MIGuided(gamma=2.0, lam=1.0, on_reject="skip", charge_first=False),
                        pairwise_fn=mdm_mi.head_pairwise_fn(head))
"""

from __future__ import annotations

import importlib

__version__ = "0.1.0"

# public name → the module that defines it (one home each; the deep paths stay internal)
_API = {
    # models and heads
    "load_model": "mdm_mi.models.loading",
    "load_mi_head": "mdm_mi.models.loading",
    "load_model_and_head": "mdm_mi.models.loading",
    # decoding: the loop, its settings and the samplers (the paper's Algorithm 1 is MIGuided)
    "decode": "mdm_mi.core.samplers",
    "Decoding": "mdm_mi.infra.flags",
    "RowStreams": "mdm_mi.core.streams",
    "row_keys": "mdm_mi.core.streams",
    "Sequential": "mdm_mi.core.samplers",
    "NaiveTopK": "mdm_mi.core.samplers",
    "EntropyBounded": "mdm_mi.core.samplers",
    "ConfidenceThreshold": "mdm_mi.core.samplers",
    "MIGuided": "mdm_mi.mi.guided",
    "OracleMI": "mdm_mi.mi.guided",
    "build_sampler": "mdm_mi.sampling.registry",
    "head_pairwise_fn": "mdm_mi.mi.guided",
    "oracle_pairwise_fn": "mdm_mi.mi.guided",
    # filling templates, at a fixed setting or calibrated to a budget
    "fill": "mdm_mi.evaluation.infill",
    "calibrate_to": "mdm_mi.evaluation.infill",
    # ground-truth MI by probing, and the head
    "exact_mi": "mdm_mi.mi.probe",
    "certified_mi": "mdm_mi.mi.probe",
    "label_contexts": "mdm_mi.mi.labeller",
    "train_head": "mdm_mi.mi.head",
    "HeadConfig": "mdm_mi.mi.head",
    "HeadTrainConfig": "mdm_mi.mi.head",
    "backbone_features": "mdm_mi.mi.head",
}
__all__ = sorted(_API)


def __getattr__(name: str):
    """Import a public name's module on first use (PEP 562)."""
    if name not in _API:
        raise AttributeError(f"module 'mdm_mi' has no attribute {name!r}")
    value = getattr(importlib.import_module(_API[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
