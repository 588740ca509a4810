"""Which contexts get MI labels: seeded draws of masked contexts from a sequence file, the split of
an evaluation draw into val and test, shards of a draw, and reading label shards back.

    draw = draw_training(sequences, n_contexts=600, mask_id=9, seed=0)    # contexts (C, N), t, rows
    sel = shard_slice(len(draw.contexts), shard=0, n_shards=4)
    labels = load_label_shards(["shard0.safetensors", ...])              # contexts, label, masked
"""

from __future__ import annotations

from pathlib import Path
from typing import NamedTuple

import numpy as np
import torch
from safetensors import SafetensorError, safe_open
from safetensors.torch import load_file

from mdm_mi.core.backbone import check_known_ids
from mdm_mi.infra.checkpoint import MODEL_FINGERPRINT, save_tensors
from mdm_mi.infra.errors import InputError
from mdm_mi.infra.io import read_json
from mdm_mi.mi.probe import mask_contexts

LABEL_SPLITS = ("all", "val", "test")  # --split: the whole draw, or one of its two disjoint evaluation parts
MAX_REMASK_ROUNDS = 100  # re-maskings of repeated contexts before an evaluation draw gives up


class ContextDraw(NamedTuple):
    """A seeded draw of contexts: ``contexts (C, N)`` long, ``t (C,)`` masking rates and ``rows (C,)``
    long, the row of each context's sequence in the sequence file."""

    contexts: torch.Tensor
    t: torch.Tensor
    rows: torch.Tensor

    def part(self, sel: slice) -> ContextDraw:
        """The contexts ``sel`` of this draw."""
        return ContextDraw(self.contexts[sel], self.t[sel], self.rows[sel])


def draw_training(sequences: np.ndarray, n_contexts: int, mask_id: int, seed: int, vocab_ids=None,
                  maskable: np.ndarray | None = None) -> ContextDraw:
    """The fixed draw: ``n_contexts`` sequences (with replacement if needed) masked at t ~ U[0,1]
    (paper: contexts masked at t ~ U[0, 1]).

    With ``vocab_ids`` (the backbone's ``vocab_token_ids``) only those tokens are maskable: BOS, EOS
    and pads of protein sequences stay fixed. With ``maskable (S, N)`` bool (a row per sequence, e.g.
    an antibody's CDR positions: :func:`read_maskable`) only its True positions are: each of them is
    masked with probability t."""
    gen = torch.Generator().manual_seed(seed)
    replace = n_contexts > len(sequences)
    idx = torch.randperm(len(sequences), generator=gen)[:n_contexts] if not replace else \
        torch.randint(len(sequences), (n_contexts,), generator=gen)
    seqs = torch.as_tensor(sequences[idx.numpy()], dtype=torch.long)
    fixed = _fixed_tokens(seqs, vocab_ids, None if maskable is None else maskable[idx.numpy()])
    return ContextDraw(*mask_contexts(seqs, mask_id, gen, fixed), idx)


def draw_contexts(sequences: np.ndarray, n_contexts: int, mask_id: int, seed: int, vocab_ids=None):
    """:func:`draw_training` → contexts ``(C, N)`` and t ``(C,)`` only."""
    draw = draw_training(sequences, n_contexts, mask_id, seed, vocab_ids)
    return draw.contexts, draw.t


def _fixed_tokens(seqs: torch.Tensor, vocab_ids, maskable: np.ndarray | None = None) -> torch.Tensor | None:
    """Tokens that are never masked (those outside ``vocab_ids``, and with ``maskable (C, N)`` those
    it marks False), or None when all are maskable."""
    fixed = None if vocab_ids is None else ~torch.isin(seqs, torch.as_tensor(vocab_ids).cpu())
    if maskable is not None:
        outside = ~torch.as_tensor(maskable, dtype=torch.bool)
        fixed = outside if fixed is None else fixed | outside
    return fixed


TOKEN_SUFFIX = ".npy"  # a token file: (S, N) integer ids of whole encoded sequences
NPY_MAGIC = b"\x93NUMPY"  # the first bytes of every .npy file
TOKEN_FILE_HINT = "make token files with hf-data --model (your model), protein-data or prepare-sudoku"


def read_token_file(path: Path) -> np.ndarray:
    """A token file → its ``(S, N)`` integer ids, read without unpickling; one-line
    :class:`InputError` naming the file and how to make one for anything else (a FASTA, text, a
    pickle, floats, a 1-D or empty array)."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"sequence file not found: {path} ({TOKEN_FILE_HINT})")
    if path.suffix.lower() != TOKEN_SUFFIX:
        raise InputError(f"{path} is not a {TOKEN_SUFFIX} token file: --sequences takes (sequences, tokens) "
                         f"integer ids; {TOKEN_FILE_HINT}")
    with path.open("rb") as fh:
        if fh.read(len(NPY_MAGIC)) != NPY_MAGIC:
            raise InputError(f"{path} is not a .npy file (no numpy header); {TOKEN_FILE_HINT}")
    try:
        tokens = np.load(path, allow_pickle=False)
    except ValueError:  # allow_pickle=False: an array of Python objects is never unpickled
        raise InputError(f"{path} holds Python objects (a pickle), not integer token ids; {TOKEN_FILE_HINT}") from None
    except (OSError, EOFError):
        raise InputError(f"{path} is not a readable .npy file (truncated?); {TOKEN_FILE_HINT}") from None
    if not isinstance(tokens, np.ndarray) or not np.issubdtype(tokens.dtype, np.integer):
        raise InputError(f"{path} holds {getattr(tokens, 'dtype', type(tokens).__name__)} values, not integer token "
                         f"ids; {TOKEN_FILE_HINT}")
    if tokens.ndim != 2 or 0 in tokens.shape:
        raise InputError(f"{path} holds an array of shape {tokens.shape}, not a non-empty 2-D (sequences, tokens) "
                         f"one; {TOKEN_FILE_HINT}")
    return tokens


def read_maskable(sequences_path: Path, sequences: np.ndarray) -> np.ndarray | None:
    """The positions a token file's contexts may mask, if its ``.json`` stamp names a ``maskable`` file
    (``antibody-data`` writes one: CDR positions): ``(S, N)`` bool beside ``sequences (S, N)``; None
    when the stamp names none (every vocabulary token maskable). One-line error on a missing file or
    a shape that does not match."""
    stamp = Path(sequences_path).with_suffix(".json")
    name = read_json(stamp).get("maskable") if stamp.is_file() else None
    if name is None:
        return None
    path = stamp.parent / name
    if not path.is_file():
        raise InputError(f"{stamp} names the maskable positions {path}, which does not exist")
    maskable = np.load(path, allow_pickle=False)
    if maskable.shape != sequences.shape or maskable.dtype != np.bool_:
        raise InputError(f"{path}: maskable positions must be bool of the token file's shape {sequences.shape}, "
                         f"got {maskable.dtype} {maskable.shape}")
    return maskable


def distinct_rows(sequences: np.ndarray) -> np.ndarray:
    """Indices of the rows of ``sequences (S, N)`` that repeat no earlier row, ascending."""
    _, first = np.unique(sequences, axis=0, return_index=True)
    return np.sort(first)


def repeated_rows(x: torch.Tensor) -> torch.Tensor:
    """``(C,)`` bool: row ``c`` of ``x (C, N)`` equals an earlier row."""
    if len(x) == 0:
        return torch.zeros(0, dtype=torch.bool)
    _, group = torch.unique(x, dim=0, return_inverse=True)
    order = torch.arange(len(x))
    first = torch.full((int(group.max()) + 1,), len(x)).scatter_reduce(0, group, order, "amin")
    return order != first[group]


def split_part(split: str, n_contexts: int, val_contexts: int, skip_contexts: int = 0) -> slice:
    """The part of a draw of ``n_contexts`` that ``split`` labels: all of it, or val's first
    ``val_contexts`` / test's rest after ``skip_contexts`` more (contexts spent on earlier choices,
    so that no test context was ever looked at; both parts non-empty)."""
    if split not in LABEL_SPLITS:
        raise InputError(f"--split must be one of {', '.join(LABEL_SPLITS)}, got {split!r}")
    if n_contexts < 1:
        raise InputError(f"--n-contexts must be >= 1, got {n_contexts}")
    if split == "all":
        return slice(0, n_contexts)
    if skip_contexts < 0:
        raise InputError(f"--skip-contexts must be >= 0, got {skip_contexts}")
    if not 0 < val_contexts < n_contexts - skip_contexts:
        raise InputError(f"--split {split} needs 0 < --val-contexts < --n-contexts − --skip-contexts, got "
                         f"{val_contexts} of {n_contexts} skipping {skip_contexts} (val and test must both be non-empty)")
    return slice(0, val_contexts) if split == "val" else slice(val_contexts + skip_contexts, n_contexts)


def draw_evaluation(sequences: np.ndarray, n_contexts: int, mask_id: int, seed: int, vocab_ids=None,
                    maskable: np.ndarray | None = None) -> ContextDraw:
    """The evaluation draw: ``n_contexts`` distinct sequences (a repeated row counts once, none is
    drawn twice), masked as in :func:`draw_training`; a context equal to an earlier one (e.g. two
    fully masked grids) is masked again with a fresh t until all differ.

    Any two disjoint slices of the draw (val and test) therefore share neither a sequence nor a context."""
    unique = distinct_rows(sequences)
    if n_contexts > len(unique):
        raise InputError(f"the val and test splits need {n_contexts} distinct sequences, "
                         f"the sequence file has {len(unique)}")
    gen = torch.Generator().manual_seed(seed)
    rows = torch.as_tensor(unique)[torch.randperm(len(unique), generator=gen)[:n_contexts]]
    seqs = torch.as_tensor(sequences[rows.numpy()], dtype=torch.long)
    fixed = _fixed_tokens(seqs, vocab_ids, None if maskable is None else maskable[rows.numpy()])
    contexts, t = mask_contexts(seqs, mask_id, gen, fixed)
    for _ in range(MAX_REMASK_ROUNDS):
        again = repeated_rows(contexts)
        if not again.any():
            return ContextDraw(contexts, t, rows)
        contexts[again], t[again] = mask_contexts(seqs[again], mask_id, gen, None if fixed is None else fixed[again])
    raise RuntimeError(f"contexts still repeat after {MAX_REMASK_ROUNDS} re-maskings")


def shard_slice(n: int, shard: int, n_shards: int) -> slice:
    """Contiguous, near-equal slice of ``range(n)`` for ``shard`` of ``n_shards``."""
    if not 0 <= shard < n_shards:
        raise InputError(f"shard {shard} is outside 0..{n_shards - 1}")
    return slice(n * shard // n_shards, n * (shard + 1) // n_shards)


TARGETS = ("mi", "tv")  # what a head learns: the MI label, or DEMASK's TV target (docs/record/rivals.md)


def save_label_shard(path: Path, tensors: dict[str, torch.Tensor], stamp: dict[str, str]) -> None:
    """Write a label shard atomically, ``stamp`` (the labelling model's ``model_fingerprint`` and its
    folder) in the safetensors metadata, so the stamp travels with the file."""
    save_tensors(tensors, path, {k: str(v) for k, v in stamp.items()})


def shard_stamp(path: Path) -> dict[str, str]:
    """The stamp :func:`save_label_shard` wrote into a shard's metadata (empty for a shard from before
    stamps); one-line error for a file that is not safetensors."""
    try:
        with safe_open(str(path), "pt") as fh:
            return dict(fh.metadata() or {})
    except (SafetensorError, OSError) as exc:
        raise InputError(f"label shard {path} is not a readable safetensors file ({exc}): label it again") from None


def check_shard_model(path: Path, stamp: dict[str, str], fingerprint: str, model) -> None:
    """A shard stamped by another model than the one of ``fingerprint`` (folder ``model``) is refused
    with one line; an unstamped shard passes (its token ids are checked instead)."""
    found = stamp.get(MODEL_FINGERPRINT)
    if found is not None and found != fingerprint:
        raise InputError(f"label shard {path} was labelled by another model (fingerprint {found}, labelled with "
                         f"--model {stamp.get('model', '?')}); {model} has fingerprint {fingerprint}: label the "
                         f"contexts again with label --model {model}")


def load_label_shards(paths, target: str = "mi", backbone=None, fingerprint: str | None = None,
                      model=None) -> dict[str, torch.Tensor]:
    """Concatenate label shards → ``contexts (C, N)``, ``label (C, N, N)``, ``masked (C, N)``.

    ``target`` (one of :data:`TARGETS`): ``mi`` reads the MI label; ``tv`` reads the shards' directed
    TV target ``tv`` and returns its symmetric part ``(tv + tvᵀ) / 2`` as ``label`` (the head is
    symmetric, and DEMASK's rule sums a pair's two directions). With ``fingerprint`` (of the model in
    folder ``model``) a shard labelled by another model is refused; with ``backbone`` a shard whose
    contexts hold ids it does not read is (a shard from before stamps, or from a foreign tool)."""
    if target not in TARGETS:
        raise InputError(f"target must be one of {', '.join(TARGETS)}, got {target!r}")
    parts = []
    for p in paths:
        if not Path(p).is_file():
            raise InputError(f"label shard not found: {p}")
        if fingerprint is not None:
            check_shard_model(Path(p), shard_stamp(Path(p)), fingerprint, model)
        part = load_file(str(p))
        if backbone is not None:
            check_known_ids(backbone, part["contexts"], f"label shard {p}")
        if target == "tv":
            if "tv" not in part:
                raise InputError(f"label shard {p} has no TV target (labelled before it existed): label it again")
            part["label"] = (part["tv"] + part["tv"].transpose(1, 2)) / 2
        parts.append(part)
    return {k: torch.cat([part[k] for part in parts]) for k in ("contexts", "label", "masked")}
