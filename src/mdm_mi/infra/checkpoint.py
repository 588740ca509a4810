"""Checkpoints as safetensors weights + a JSON sidecar; loading never unpickles.

    save_checkpoint(model, "results/sudoku/model", {"domain": "sudoku", "model": {...}})
    state, meta = load_checkpoint("results/sudoku/model")
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save_file

from mdm_mi.infra.errors import UserError
from mdm_mi.infra.io import MANIFEST, atomic_path, write_json

WEIGHTS = "model.safetensors"
META = "meta.json"
MODEL_FINGERPRINT = "model_fingerprint"  # labels' and heads' key: the fingerprint of the model that made them
HF_CONFIG = "config.json"  # a Hugging Face save_pretrained folder (read_meta hints at import-hf)
HASH_CHUNK = 1 << 20


class CheckpointError(UserError):
    """A checkpoint that is missing, truncated, corrupt or for another domain."""


def save_checkpoint(model: torch.nn.Module, directory: str | Path, meta: dict) -> None:
    """Write ``directory/model.safetensors`` and ``directory/meta.json`` atomically; a shipped
    backbone's MANIFEST.json left there (an imported model retrained in place) is removed: its hashes
    and calibration belong to the other weights."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / MANIFEST).unlink(missing_ok=True)
    state = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    save_tensors(state, directory / WEIGHTS)
    write_json(directory / META, meta)


def save_tensors(tensors: dict[str, torch.Tensor], path: str | Path, metadata: dict[str, str] | None = None) -> None:
    """Write ``tensors`` (and string ``metadata``) to a safetensors file atomically, the same bytes for the
    same tensors and metadata: the library writes the ``__metadata__`` entries in an order that changes
    from process to process, so the header is rewritten with its keys sorted (the same entries, so the
    same length)."""
    with atomic_path(path) as tmp:
        save_file(tensors, str(tmp), metadata=metadata)
        if metadata and len(metadata) > 1:
            _sort_header(tmp)


def _sort_header(path: Path) -> None:
    """Rewrite a safetensors header in place with sorted keys, padded as the library pads it (spaces);
    left as it is if the sorted text would not fit (it always does: the same entries)."""
    with path.open("r+b") as fh:
        size = int.from_bytes(fh.read(8), "little")
        header = json.loads(fh.read(size))
        text = json.dumps(header, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
        if len(text) <= size:
            fh.seek(8)
            fh.write(text + b" " * (size - len(text)))


def sha256_file(path: str | Path) -> str:
    """Hex sha256 of a file's bytes."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for chunk in iter(lambda: fh.read(HASH_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def verify_manifest(directory: str | Path) -> dict:
    """Check every file listed in ``directory/MANIFEST.json`` against its sha256 → the manifest;
    :class:`CheckpointError` naming the first file that is missing or differs."""
    path = Path(directory) / MANIFEST
    try:
        manifest = json.loads(path.read_text())
        files = dict(manifest["files"])
    except (OSError, json.JSONDecodeError, KeyError, TypeError, ValueError):
        raise CheckpointError(f"checkpoint manifest is unreadable or has no 'files': {path}") from None
    for name, want in files.items():
        file = Path(directory) / name
        if not file.is_file():
            raise CheckpointError(f"checkpoint file missing: {file} (listed in {path})")
        got = sha256_file(file)
        if got != want:
            raise CheckpointError(f"checkpoint file {file} has sha256 {got[:16]}…, but {MANIFEST} says {want[:16]}…: "
                                  "it was changed or corrupted")
    return manifest


def read_meta(directory: str | Path) -> dict:
    """A checkpoint folder's ``meta.json`` as a dict (one-line :class:`CheckpointError` when missing,
    not JSON or not an object)."""
    path = Path(directory) / META
    if not path.is_file():
        hint = " (a Hugging Face folder: mark it with `mdm-mi import-hf --weights DIR`)" \
            if (Path(directory) / HF_CONFIG).is_file() else ""
        raise CheckpointError(f"checkpoint file missing: {path}{hint}")
    try:
        meta = json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"checkpoint metadata is not valid JSON: {path} ({exc})") from None
    if not isinstance(meta, dict):
        raise CheckpointError(f"checkpoint metadata is not a JSON object: {path}")
    return meta


def load_checkpoint(directory: str | Path, domain: str | None = None,
                    meta: dict | None = None) -> tuple[dict, dict]:
    """Return ``(state_dict, meta)``; raise :class:`CheckpointError` with a one-line reason. A folder
    with a ``MANIFEST.json`` (a shipped checkpoint) is first checked against its hashes. ``meta``, when
    the caller has read it already (:mod:`mdm_mi.models.loading`), is not read again."""
    directory = Path(directory)
    weights = directory / WEIGHTS
    for path in (weights, directory / META):
        if not path.is_file():
            raise CheckpointError(f"checkpoint file missing: {path}")
    if (directory / MANIFEST).is_file():
        verify_manifest(directory)
    meta = read_meta(directory) if meta is None else meta
    if domain is not None and meta.get("domain") != domain:
        raise CheckpointError(
            f"checkpoint {directory} is for domain {meta.get('domain')!r}, not {domain!r}"
        )
    try:
        state = load_file(str(weights))
    except (SafetensorError, OSError, RuntimeError) as exc:
        raise CheckpointError(f"checkpoint weights are corrupt or truncated: {weights} ({exc})") from None
    return state, meta
