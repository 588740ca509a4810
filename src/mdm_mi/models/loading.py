"""THE model loader: a model folder (or a run's, found by :mod:`mdm_mi.models.locate`) → its backbone,
and an MI head checked against that backbone. Every verb loads models here.

``meta.json`` is read once per folder; every check lives here (the folder is a model and not a head,
or a head and not a model; of the domain asked for; a domain the table knows; a head that reads the
backbone's hidden width), and every failure is one :class:`~mdm_mi.infra.checkpoint.CheckpointError`
line. The domain-specific loaders (``sudoku.model.load_sudoku_model``, ``protein.model.load_protein_model``,
``hf.backbone.load_hf_model``, ``mi.head.load_head``) are reached only from here, through each
:data:`~mdm_mi.models.domains.DOMAINS` entry's ``load`` (``tests/test_structure.py`` checks).

    backbone, meta = load_model("results/cpu-default/sudoku/model", "cpu", domain="sudoku")
    backbone, head = load_model_and_head(model_dir, head_dir, "cpu", domain=SEQUENCES)

Every model has a fingerprint (:func:`model_fingerprint`: its weights' sha256 and its alphabet), which
the labels and heads made on it carry; :func:`load_mi_head` refuses a head made on another model.
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
from pathlib import Path

from mdm_mi.core.backbone import FINGERPRINT_CHARS
from mdm_mi.models.domains import DOMAINS
from mdm_mi.infra.checkpoint import META, MODEL_FINGERPRINT, WEIGHTS, CheckpointError, read_meta, sha256_file

HEAD_DOMAIN = "mi_head"  # the domain mdm_mi.mi.head.save_head writes
SEQUENCES = "sequences"  # ``domain=`` for any sequence domain (protein, hf): what generate and compare decode
FINGERPRINT = "fingerprint"  # a model's meta.json key: its fingerprint, stored where it is computed once (import-hf)
HEAD_LAYER = "backbone_hidden_layer"  # a head's meta key: the hidden layer of the model it was trained on
WEIGHT_SUFFIXES = (".safetensors", ".bin")  # the files of a weights folder that hold weights


def check_meta(folder: str | Path, meta: dict, want: str | None = None) -> str:
    """The domain of the checkpoint whose ``meta`` this is, refused (one line) when it is a head where a
    model is needed or a model where a head is (``want == HEAD_DOMAIN``), not of domain ``want`` (or not a
    sequence domain, for ``SEQUENCES``) or unknown."""
    found = meta.get("domain")
    if not isinstance(found, str):
        raise CheckpointError(f"checkpoint metadata has no readable 'domain': {Path(folder) / META}")
    if found == HEAD_DOMAIN and want != HEAD_DOMAIN:
        raise CheckpointError(f"{folder} is an MI head checkpoint, not a model: pass it as --head "
                              "(and the model as --model)")
    if want == HEAD_DOMAIN and found != HEAD_DOMAIN:
        raise CheckpointError(f"{folder} is a {found!r} model checkpoint, not an MI head: pass it as --model")
    if want == SEQUENCES and not (found in DOMAINS and DOMAINS[found].sequences):
        seq = ", ".join(n for n, d in DOMAINS.items() if d.sequences)
        raise CheckpointError(f"{folder} is a {found!r} model, but this needs a sequence model ({seq})")
    if want not in (None, SEQUENCES, found):
        raise CheckpointError(f"{folder} is a {found!r} model, but this needs a {want!r} model")
    if found not in DOMAINS and found != HEAD_DOMAIN:
        raise CheckpointError(f"checkpoint {folder} has unknown domain {found!r}; known: {', '.join(DOMAINS)}")
    return found


def model_domain(folder: str | Path, want: str | None = None) -> str:
    """The domain of the model in ``folder`` (checked as :func:`check_meta` does), without loading it:
    for a verb that checks its input before the model loads."""
    return check_meta(folder, read_meta(folder), want)


def load_model(folder: str | Path, device="cpu", domain: str | None = None, meta: dict | None = None) -> tuple:
    """The backbone in ``folder`` → ``(backbone in eval mode on device, meta)``; ``domain`` (a domain
    name or :data:`SEQUENCES`) refuses a model of another domain. ``meta`` given (one not written yet:
    ``import-hf`` checks the model before it writes anything) is used instead of ``meta.json``."""
    given = meta is not None
    meta = read_meta(folder) if meta is None else meta
    found = check_meta(folder, meta, domain)
    backbone = DOMAINS[found].load(Path(folder), meta, device)  # its own checks of meta.json first
    if not given:
        check_recorded_fingerprint(folder, meta)
    return backbone, meta


def check_recorded_fingerprint(folder: str | Path, meta: dict) -> None:
    """The fingerprint ``meta.json`` recorded at import (``import-hf``) is still that of the weights
    there: weights replaced since are refused in one line, before labels or heads made on the old ones
    could be read against them. A folder that records none is fingerprinted by content when asked."""
    recorded = meta.get(FINGERPRINT)
    if recorded is None:
        return
    actual = compute_fingerprint(folder, meta)
    if actual != recorded:
        raise CheckpointError(f"the weights (or alphabet) of {folder} changed since they were imported (fingerprint "
                              f"{recorded} recorded, {actual} now): re-import them with `mdm-mi import-hf --weights ...` "
                              "(labels and heads made on the old weights are then refused)")


def weight_files(folder: str | Path, meta: dict) -> list[Path]:
    """The files holding the weights of the model in ``folder``: ``meta["weights"]`` (relative to the
    folder; a file, or a folder whose ``*.safetensors``/``*.bin`` files are read: an ``hf`` model's),
    else the folder's ``model.safetensors``; none when there is no such file."""
    source = Path(os.path.normpath(Path(folder) / str(meta.get("weights", WEIGHTS))))  # folder may not exist yet
    if source.is_dir():
        return sorted(p for p in source.iterdir() if p.is_file() and p.suffix in WEIGHT_SUFFIXES)
    return [source] if source.is_file() else []


def compute_fingerprint(folder: str | Path, meta: dict) -> str:
    """A short hash of what fixes a model's logits: the sha256 of each of its :func:`weight_files` and
    its alphabet (``meta["tokens"]``, an ``hf`` model's); not its folder, nor its hidden layer (a head
    records that itself)."""
    parts = {"weights": [_file_hash(p) for p in weight_files(folder, meta)], "tokens": meta.get("tokens")}
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()[:FINGERPRINT_CHARS]


def _file_hash(path: Path) -> str:
    """The sha256 of ``path``, hashed once per process while its size and modification time stay the
    same (every load checks the recorded fingerprint; a comparison loads its model many times)."""
    st = path.stat()
    return _hash_of(str(path.resolve()), st.st_size, st.st_mtime_ns)


@functools.lru_cache(maxsize=256)
def _hash_of(path: str, size: int, mtime_ns: int) -> str:
    return sha256_file(path)


def model_fingerprint(folder: str | Path, meta: dict | None = None) -> str:
    """The fingerprint of the model in ``folder``: the one its ``meta.json`` stores (``import-hf``
    computes it once), else :func:`compute_fingerprint` (hashing the weights: milliseconds for a small
    model, about a second per GB)."""
    meta = read_meta(folder) if meta is None else meta
    return meta.get(FINGERPRINT) or compute_fingerprint(folder, meta)


def weights_identity(model: str | Path, heads=(), device="cpu", **settings) -> str:
    """What fixes a decode besides its items and sampler, as one JSON string (a
    :class:`~mdm_mi.evaluation.chunks.ChunkStore`'s identity): the model's fingerprint, the fingerprints
    of the ``heads`` folders' weights (``None`` entries skipped), the device type (``cuda:0`` → ``cuda``)
    and the caller's ``settings`` (seed, temperature, ...), in that order."""
    fingerprints = [compute_fingerprint(p, read_meta(p)) for p in heads if p is not None]
    base = {"model": model_fingerprint(model), "heads": fingerprints, "device": str(device).split(":")[0]}
    return json.dumps(base | settings)


def head_stamp(folder: str | Path, meta: dict) -> dict:
    """What a head trained on the model in ``folder`` (its ``meta``) records of it, for
    :func:`check_head_model`: the model's fingerprint and hidden layer."""
    return {MODEL_FINGERPRINT: model_fingerprint(folder, meta), HEAD_LAYER: meta.get("hidden_layer")}


def check_head_model(folder: str | Path, meta: dict, model: str | Path) -> None:
    """The head in ``folder`` (its ``meta``) was trained on the model in ``model``, at its hidden layer:
    one-line :class:`CheckpointError` otherwise. A head saved before heads recorded their model passes."""
    want = meta.get(MODEL_FINGERPRINT)
    if want is None:
        return
    model_meta = read_meta(model)
    found = model_fingerprint(model, model_meta)
    if found != want:
        raise CheckpointError(f"MI head {folder} was trained on another model (fingerprint {want}, trained with "
                              f"--model {meta.get('backbone')}); model {model} has fingerprint {found}: pass the head "
                              f"trained on this model, or train one with train-head --model {model}")
    if HEAD_LAYER in meta and meta[HEAD_LAYER] != model_meta.get("hidden_layer"):
        raise CheckpointError(f"MI head {folder} reads hidden layer {meta[HEAD_LAYER]} of its model, but {model} is "
                              f"marked with hidden layer {model_meta.get('hidden_layer')}: pass the model folder the "
                              "head was trained on, or train a head on this one with train-head")


def load_mi_head(folder: str | Path, device="cpu", backbone=None, model: str | Path | None = None,
                 target: str = "mi"):
    """The MI head in ``folder`` (eval mode, on ``device``); with ``model`` (the backbone's folder),
    refused unless it was trained on that model (:func:`check_head_model`); with ``backbone``, refused
    unless it reads hidden states of that backbone's width; refused
    unless it learned ``target`` (``mi``, or ``tv``: DEMASK's TV target; a head saved before targets
    existed learned ``mi``)."""
    from mdm_mi.mi.head import load_head  # lazy: the head (and its training code) only when a head is loaded

    meta = read_meta(folder)
    check_meta(folder, meta, HEAD_DOMAIN)
    if meta.get("target", "mi") != target:
        raise CheckpointError(f"head {folder} learned the {meta.get('target')!r} target, not {target!r}: "
                              f"pass a head trained with train-head --target {target}")
    if model is not None:
        check_head_model(folder, meta, model)
    head, _ = load_head(folder, device, meta=meta)
    if backbone is not None and head.in_dim != backbone.hidden_dim:
        raise CheckpointError(f"MI head {folder} reads hidden states of width {head.in_dim}, but model "
                              f"{model or 'the backbone'} has width {backbone.hidden_dim}: "
                              "pass the head trained on this model")
    return head


def load_model_and_head(model: str | Path, head: str | Path, device="cpu", domain: str | None = None) -> tuple:
    """The backbone in ``model`` and the MI head in ``head`` checked against it → ``(backbone, head)``."""
    backbone, _ = load_model(model, device, domain)
    return backbone, load_mi_head(head, device, backbone, model)
