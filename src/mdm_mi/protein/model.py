"""Protein backbone checkpoints: a small ESM-C trained here, or ESM-C 300M imported by reference.

A protein model folder always holds ``meta.json`` with ``domain: protein``:

- ``kind: trained`` — a small ``ESMC(d_model, n_heads, n_layers)`` trained with the masked-diffusion
  objective (:mod:`mdm_mi.protein.train`); weights in ``model.safetensors`` beside it.
- ``kind: columns`` — a :class:`~mdm_mi.protein.family.columns.ColumnMDM` over one family's alignment
  columns (Potts term + small transformer, :mod:`mdm_mi.protein.family.column_jobs`); the protein entry
  of :data:`mdm_mi.models.domains.DOMAINS` loads it (not this module: ``protein/family/`` sits above ``protein/``)
  into a :class:`~mdm_mi.protein.family.columns.ColumnBackbone`, which decodes rows to proteins by dropping gaps.
- ``kind: esmc-300m`` — ESM-C 300M; ``weights`` names the downloaded (or user-copied) ``.pth`` file,
  loaded with ``torch.load(weights_only=True)`` by :func:`mdm_mi.protein.esmc.load_esmc`.

The ESM-C kinds load into an :class:`~mdm_mi.protein.esmc.ESMCBackbone`; all are Backbones, so labelling,
the MI head, the samplers and the metrics never see which one it is.

    backbone, meta = load_protein_model("results/cpu-default/protein/model")  # verbs: loading.load_model
"""

from __future__ import annotations

from pathlib import Path

import torch

from mdm_mi.infra.checkpoint import CheckpointError, META, load_checkpoint, read_meta, save_checkpoint
from mdm_mi.infra.io import write_json
from mdm_mi.protein.esmc import ESMCBackbone, ESMC_300M_DIMS, esmc_tokenizer, load_esmc

DOMAIN = "protein"
KIND_TRAINED = "trained"
KIND_300M = "esmc-300m"
KIND_COLUMNS = "columns"  # a masked model over a family's alignment columns (protein/family/columns.py)


def new_esmc(d_model: int, n_heads: int, n_layers: int):
    """A randomly initialised ``esm`` ESMC (plain SDPA attention, which runs on CPU)."""
    from esm.models.esmc import ESMC  # lazy: esm adds ~1 s to every CLI start


    if d_model % n_heads:
        raise ValueError(f"d_model {d_model} is not divisible by n_heads {n_heads}")
    return ESMC(d_model=d_model, n_heads=n_heads, n_layers=n_layers, tokenizer=esmc_tokenizer(), use_flash_attn=False)


def save_trained(model, directory: str | Path, dims: dict, hidden_layer: int, extra: dict) -> None:
    """Write a trained ESMC as ``model.safetensors`` + ``meta.json`` (kind ``trained``)."""
    meta = {"domain": DOMAIN, "kind": KIND_TRAINED, "esmc": dict(dims), "hidden_layer": hidden_layer} | extra
    save_checkpoint(model, directory, meta)


def write_300m_meta(directory: str | Path, weights: str | Path, hidden_layer: int, bf16: bool) -> None:
    """Record ESM-C 300M at ``weights`` as this folder's model (kind ``esmc-300m``); the weights file
    is referenced, not copied (1.2 GB)."""
    write_json(Path(directory) / META, {"domain": DOMAIN, "kind": KIND_300M, "esmc": dict(ESMC_300M_DIMS),
                                        "weights": str(Path(weights).resolve()), "hidden_layer": hidden_layer,
                                        "bf16": bf16})


def _meta(directory: Path) -> dict:
    """``directory``'s meta.json, refused (one line) unless it is a protein model's."""
    meta = read_meta(directory)
    if meta.get("domain") != DOMAIN:
        raise CheckpointError(f"checkpoint {directory} is for domain {meta.get('domain')!r}, not {DOMAIN!r}")
    return meta


def load_protein_model(directory: str | Path, device: str | torch.device = "cpu", hidden_layer: int | None = None,
                       meta: dict | None = None):
    """Load a protein model folder → ``(ESMCBackbone in eval mode, meta)``; never unpickles.

    ``hidden_layer`` overrides the layer recorded in meta (e.g. the embedding layer of the metrics);
    ``meta``, read already by :func:`mdm_mi.models.loading.load_model` (the verbs' way in), is not read again.
    Missing, corrupt or mismatched files raise :class:`CheckpointError` with one line.
    """
    directory = Path(directory)
    meta = _meta(directory) if meta is None else meta
    try:
        dims, layer = {k: int(meta["esmc"][k]) for k in ("d_model", "n_heads", "n_layers")}, int(meta["hidden_layer"])
    except (KeyError, TypeError, ValueError):
        raise CheckpointError(f"protein checkpoint metadata lacks esmc dims or hidden_layer: {directory / META}") from None
    layer = layer if hidden_layer is None else hidden_layer
    if meta.get("kind") == KIND_300M:
        model = load_esmc(meta.get("weights", ""), device=device, **dims)
        return ESMCBackbone(model, layer, bool(meta.get("bf16", False))).to(device).eval(), meta
    if meta.get("kind") != KIND_TRAINED:
        raise CheckpointError(f"protein checkpoint {directory} has unknown kind {meta.get('kind')!r}")
    state, _ = load_checkpoint(directory, domain=DOMAIN, meta=meta)
    model = new_esmc(**dims)
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as exc:
        first = str(exc).strip().splitlines()[0][:200]
        raise CheckpointError(f"checkpoint {directory} does not match an ESM-C with {dims}: {first}") from None
    return ESMCBackbone(model.float(), layer).to(device).eval(), meta
