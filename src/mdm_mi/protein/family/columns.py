"""A masked diffusion model over a family's alignment columns: a Potts (plmDCA) output term plus an
optional small transformer, and its :class:`~mdm_mi.core.backbone.Backbone` adapter.

    model = ColumnMDM(ColumnDims(length=53, d_model=64, n_heads=4, n_layers=2))
    backbone = ColumnBackbone(model)
    tokens = backbone.encode(["CLEPPYTGPC-" + "_" * 42])          # (1, 55): BOS, 53 columns, EOS
    out = backbone(tokens)                                        # logits (1, 55, 21), hidden (1, 55, D)

**The model.** A row of the alignment has L match columns, each one of the 21 letters of
:data:`~mdm_mi.protein.family.alignment.COLUMN_ALPHABET` (20 amino acids + gap; insertions are not
modelled, as in ArDCA and plmDCA). At any mask rate, the logits of a masked column i are

    logits_i(a) = W h_i(a) + Σ_{j visible, j≠i} J_ij(a, x_j),      J_ij(a, b) = J_ji(b, a),

where ``h`` is the output of a transformer over the columns (token + column embedding + the visible
fraction, ``n_layers`` pre-norm blocks; with ``n_layers = 0`` just the embeddings, i.e. a column field
that knows the mask rate) and ``J`` is a symmetric Potts coupling tensor with zero diagonal blocks.
With every other column visible the second term is exactly plmDCA's conditional (Ekeberg et al.
2013); at higher mask rates it is that conditional restricted to what is visible, and the
transformer learns the correction. Why the explicit couplings: on this family a plain transformer
over the columns carries little co-variation (a probe measured corrected-MI r 0.205 against
0.482 for ArDCA) while the pairwise term alone reaches most of ArDCA's; with ~1,400 effective sequences the
inductive bias of the family's own models (couplings, reweighting, L2) carries the co-variation.

**Hidden states** for the MI head: ``[LayerNorm(h_i), Σ_j J_ij(·, x_j)]`` — the transformer state and
the coupling field acting on column i (21 numbers), so the head sees the pairwise term directly.

**Token ids** (the Backbone protocol's): letters 0–20 in :data:`COLUMN_ALPHABET` order (20 = gap),
mask 21, BOS 22, EOS 23, pad 24. ``vocab_token_ids`` is ``arange(21)``. BOS/EOS frame every row so
that the protein code (contexts, generation) handles a column model like the sequence models; they
are never masked and the model never sees them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch import nn

from mdm_mi.core.backbone import ALIGNED, BackboneOutput, Capabilities
from mdm_mi.infra.checkpoint import CheckpointError, load_checkpoint, save_checkpoint
from mdm_mi.infra.errors import InputError
from mdm_mi.infra.reader import MASK_CHAR
from mdm_mi.protein.family.alignment import COLUMN_ALPHABET, GAP, N_LETTERS
from mdm_mi.protein.model import KIND_COLUMNS

MASK_ID = N_LETTERS  # 21
BOS_ID, EOS_ID, PAD_ID = N_LETTERS + 1, N_LETTERS + 2, N_LETTERS + 3
INIT_STD = 0.02


@dataclass(frozen=True)
class ColumnDims:
    """Shape of a :class:`ColumnMDM`: ``length`` columns, transformer width/heads/blocks (0 blocks =
    Potts term + mask-rate-aware column fields only), dropout inside the blocks (training only) and
    ``mean_field`` iterations that let masked columns act through their predicted marginals."""

    length: int
    d_model: int
    n_heads: int
    n_layers: int
    dropout: float = 0.0
    mean_field: int = 0


class ColumnMDM(nn.Module):
    """``forward(x (B, L) long in 0..21) → (logits (B, L, 21), hidden (B, L, d_model + 21))``."""

    def __init__(self, dims: ColumnDims):
        super().__init__()
        if dims.d_model % dims.n_heads:
            raise ValueError(f"d_model {dims.d_model} is not divisible by n_heads {dims.n_heads}")
        self.dims = dims
        size = dims.length * N_LETTERS
        self.tok = nn.Embedding(N_LETTERS + 1, dims.d_model)  # 21 letters + mask
        self.pos = nn.Parameter(torch.randn(dims.length, dims.d_model) * INIT_STD)
        self.visible = nn.Parameter(torch.zeros(dims.d_model))  # × fraction of visible columns
        layer = nn.TransformerEncoderLayer(dims.d_model, dims.n_heads, 4 * dims.d_model, dims.dropout,
                                           activation="gelu", batch_first=True, norm_first=True)
        self.blocks = nn.TransformerEncoder(layer, dims.n_layers, enable_nested_tensor=False) if dims.n_layers else None
        self.norm = nn.LayerNorm(dims.d_model)
        self.out = nn.Linear(dims.d_model, N_LETTERS)
        self.couplings = nn.Parameter(torch.zeros(size, size))
        block = torch.arange(size) // N_LETTERS
        self.register_buffer("off_diagonal", (block[:, None] != block[None, :]).float(), persistent=False)

    def coupling_matrix(self) -> torch.Tensor:
        """``J`` as ``(L·21, L·21)``: symmetric, zero on the diagonal ``(i, i)`` blocks."""
        return 0.5 * (self.couplings + self.couplings.T) * self.off_diagonal

    def field(self, x: torch.Tensor, soft: torch.Tensor | None = None, j: torch.Tensor | None = None) -> torch.Tensor:
        """``Σ_{j visible} J_ij(·, x_j)`` → ``(B, L, 21)``; masked columns contribute nothing, or, given
        ``soft (B, L, 21)`` (their predicted marginals), ``Σ_b J_ij(·, b) soft_j(b)`` (mean field).
        ``j``: :meth:`coupling_matrix`, when the caller already built it for this pass."""
        visible = (x != MASK_ID)[..., None]
        shown = F.one_hot(x.clamp(max=N_LETTERS - 1), N_LETTERS).float() * visible
        if soft is not None:
            shown = shown + soft * ~visible
        j = self.coupling_matrix() if j is None else j
        return (shown.flatten(1) @ j).view(*x.shape, N_LETTERS)

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        assert x.ndim == 2 and x.shape[1] == self.dims.length, x.shape
        frac = (x != MASK_ID).float().mean(1, keepdim=True)[..., None]  # (B, 1, 1)
        h = self.tok(x) + self.pos + frac * self.visible
        if self.blocks is not None:
            h = self.blocks(h)
        h = self.norm(h)
        base, j = self.out(h), self.coupling_matrix()  # J once per pass, however many mean-field steps
        field = self.field(x, j=j)
        for _ in range(self.dims.mean_field):  # masked neighbours act through their current marginals
            field = self.field(x, torch.softmax(base + field, -1), j)
        return base + field, torch.cat([h, field], -1)

    def coupling_l2(self) -> torch.Tensor:
        """``Σ J²`` over the symmetric coupling tensor (each pair counted in both orders)."""
        return self.coupling_matrix().square().sum()


def encode_rows(rows: list[str], length: int) -> torch.Tensor:
    """Aligned rows (``length`` letters of :data:`COLUMN_ALPHABET` or ``_``) → ``(B, length + 2)`` ids
    ``BOS + columns + EOS``; one-line :class:`InputError` naming a row of another length or letter."""
    lut = {c: i for i, c in enumerate(COLUMN_ALPHABET)} | {MASK_CHAR: MASK_ID}
    out = torch.full((len(rows), length + 2), PAD_ID, dtype=torch.long)
    for b, row in enumerate(rows):
        if len(row) != length or not set(row) <= lut.keys():
            raise InputError(f"row {b} is not {length} letters of {COLUMN_ALPHABET!r} or '{MASK_CHAR}': {row[:60]!r}")
        out[b, 0], out[b, -1] = BOS_ID, EOS_ID
        out[b, 1:-1] = torch.tensor([lut[c] for c in row])
    return out


class ColumnBackbone(nn.Module):
    """A :class:`ColumnMDM` behind the Backbone protocol (rows ``BOS + L columns + EOS``, ids above).

    Besides the protocol it has what the protein code asks of a protein backbone: ``encode`` (aligned
    rows, ``_`` = masked), ``decode_tokens`` (a row → protein: gaps and specials dropped),
    ``decode_rows`` (the aligned rows), ``masked_sequence``, ``pad_id``, ``bf16`` and ``fixed_length``;
    its :class:`~mdm_mi.core.backbone.Capabilities` say so to the callers (frame ``aligned``: every row
    has L columns, generation draws no lengths; it does not embed proteins)."""

    vocab_size = N_LETTERS
    mask_id = MASK_ID
    pad_id, bos_id, eos_id = PAD_ID, BOS_ID, EOS_ID
    bf16 = False

    def __init__(self, model: ColumnMDM):
        super().__init__()
        self.model = model
        self.fixed_length = model.dims.length
        self.capabilities = Capabilities(ALIGNED, fixed_length=model.dims.length, embeds=False)
        self.hidden_dim = model.dims.d_model + N_LETTERS
        self.register_buffer("vocab_token_ids", torch.arange(N_LETTERS), persistent=False)

    def forward(self, tokens: torch.Tensor) -> BackboneOutput:
        """tokens ``(B, L + 2)`` → logits ``(B, L + 2, 21)``, hidden ``(B, L + 2, D)`` (zero at BOS/EOS)."""
        if tokens.shape[1] != self.fixed_length + 2:
            raise InputError(f"a column model takes rows of {self.fixed_length} columns + BOS/EOS, "
                             f"got width {tokens.shape[1]}")
        logits, hidden = self.model(tokens[:, 1:-1])
        pad = (0, 0, 1, 1)
        return BackboneOutput(logits=F.pad(logits, pad), hidden=F.pad(hidden, pad))

    def encode(self, rows: list[str], device=None) -> torch.Tensor:
        """Aligned rows (L letters of :data:`COLUMN_ALPHABET` or ``_``) → ``(B, L + 2)`` ids."""
        out = encode_rows(rows, self.fixed_length)
        return out.to(device) if device is not None else out

    def masked_sequence(self, length: int | None = None, device="cpu") -> torch.Tensor:
        """``BOS + L × mask + EOS`` ``(L + 2,)``; ``length`` must be None or L."""
        if length not in (None, self.fixed_length):
            raise InputError(f"a column model generates rows of {self.fixed_length} columns, not {length}")
        row = torch.full((self.fixed_length + 2,), MASK_ID, dtype=torch.long, device=device)
        row[0], row[-1] = BOS_ID, EOS_ID
        return row

    def decode_rows(self, tokens: torch.Tensor) -> list[str]:
        """``(B, L + 2)`` ids → aligned rows (``_`` for a mask)."""
        chars = dict(enumerate(COLUMN_ALPHABET)) | {MASK_ID: MASK_CHAR}
        return ["".join(chars.get(i, "") for i in row[1:-1]) for row in tokens.tolist()]

    def decode_tokens(self, tokens: torch.Tensor) -> list[str]:
        """``(B, L + 2)`` ids → proteins: the rows with gaps dropped (a mask shows as ``_``)."""
        return [row.replace(GAP, "") for row in self.decode_rows(tokens)]



def n_params(model: nn.Module) -> int:
    """Number of parameters (the coupling tensor counted once per unordered pair of letters' columns)."""
    size = model.dims.length * N_LETTERS
    coupling_free = (size * size - model.dims.length * N_LETTERS ** 2) // 2
    return sum(p.numel() for p in model.parameters()) - model.couplings.numel() + coupling_free


def save_column_model(model: ColumnMDM, directory: str | Path, hidden_layer: int, extra: dict) -> None:
    """``model.safetensors`` + ``meta.json`` (``domain: protein``, ``kind: columns``, its dims)."""
    meta = {"domain": "protein", "kind": KIND_COLUMNS, "columns": asdict(model.dims),
            "hidden_layer": hidden_layer} | extra
    save_checkpoint(model, directory, meta)


def load_column_model(directory: str | Path, meta: dict, device="cpu") -> ColumnBackbone:
    """A column model folder (its meta already read) → :class:`ColumnBackbone` in eval mode."""
    try:
        dims = ColumnDims(**{k: meta["columns"][k] for k in ("length", "d_model", "n_heads", "n_layers")},
                          mean_field=int(meta["columns"].get("mean_field", 0)))
    except (KeyError, TypeError):
        raise CheckpointError(f"column model metadata lacks its dims: {directory}") from None
    state, _ = load_checkpoint(directory, domain="protein", meta=meta)
    model = ColumnMDM(dims)
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as exc:
        first = str(exc).strip().splitlines()[0][:200]
        raise CheckpointError(f"checkpoint {directory} does not match a column model {dims}: {first}") from None
    return ColumnBackbone(model).to(device).eval()

