"""The Sudoku masked diffusion model: a bidirectional transformer over the 81 cells.

Positions are given by learned row and column embeddings (a standard 2D positional encoding);
nothing encodes the game's rules — no attention mask or feature says which cells constrain each other,
so any structure the MI head recovers was learned by the model.

    model = SudokuMDM(ModelConfig(128, n_layers=4, n_heads=8, ff_mult=4, dropout=0.0, hidden_layer=-1))
    out = model(tokens)          # BackboneOutput(logits (B, 81, 9), hidden (B, 81, 128))
"""

from __future__ import annotations

import math
from contextlib import contextmanager
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn

from mdm_mi.core.backbone import BackboneOutput, Capabilities, GRID
from mdm_mi.infra.checkpoint import CheckpointError, load_checkpoint
from mdm_mi.sudoku.grid import MASK_ID, N_CELLS, N_DIGITS, SIDE


@dataclass(frozen=True)
class ModelConfig:
    """Shape of the transformer. ``hidden_layer`` picks the block whose output the MI head reads
    (0 = embeddings, n_layers = last block; negative counts from the end). Defaults live in the
    config schema only."""

    d_model: int
    n_layers: int
    n_heads: int
    ff_mult: int
    dropout: float
    hidden_layer: int


class Block(nn.Module):
    """Pre-norm transformer block with full (bidirectional) self-attention."""

    def __init__(self, d: int, n_heads: int, ff_mult: int, dropout: float):
        super().__init__()
        self.n_heads = n_heads
        self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ff = nn.Sequential(nn.Linear(d, ff_mult * d), nn.GELU(), nn.Linear(ff_mult * d, d))
        self.drop = nn.Dropout(dropout)

    def attention(self, x: torch.Tensor) -> torch.Tensor:
        """The attention weights this block computes on its input ``x (B, N, D)``, averaged over heads:
        ``(B, N, N)``, rows (queries) summing to 1. Recomputed from ``x`` (one linear and a softmax,
        no backbone pass): the fused kernel of :meth:`forward` does not return them."""
        b, n, d = x.shape
        q, k, _ = self.qkv(self.ln1(x)).view(b, n, 3, self.n_heads, d // self.n_heads).unbind(2)
        scores = q.transpose(1, 2) @ k.transpose(1, 2).transpose(2, 3) / math.sqrt(d // self.n_heads)
        return scores.float().softmax(-1).mean(1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """``(B, N, D) → (B, N, D)``."""
        b, n, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).view(b, n, 3, self.n_heads, d // self.n_heads).unbind(2)
        att = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2))
        x = x + self.drop(self.proj(att.transpose(1, 2).reshape(b, n, d)))
        return x + self.drop(self.ff(self.ln2(x)))


class SudokuMDM(nn.Module):
    """Implements the :class:`~mdm_mi.core.backbone.Backbone` protocol for 9×9 Sudoku."""

    vocab_size = N_DIGITS
    mask_id = MASK_ID
    capabilities = Capabilities(GRID, fixed_length=N_CELLS, embeds=False)  # 81 cells, no protein embedding

    def __init__(self, cfg: ModelConfig):
        super().__init__()
        if cfg.d_model % cfg.n_heads:
            raise ValueError(f"d_model {cfg.d_model} is not divisible by n_heads {cfg.n_heads}")
        self.cfg = cfg
        self.hidden_dim = cfg.d_model
        self.tok = nn.Embedding(N_DIGITS + 1, cfg.d_model)  # + the mask token
        self.row = nn.Embedding(SIDE, cfg.d_model)
        self.col = nn.Embedding(SIDE, cfg.d_model)
        self.blocks = nn.ModuleList(
            Block(cfg.d_model, cfg.n_heads, cfg.ff_mult, cfg.dropout) for _ in range(cfg.n_layers)
        )
        self.ln_f = nn.LayerNorm(cfg.d_model)
        self.out = nn.Linear(cfg.d_model, N_DIGITS)
        cells = torch.arange(N_CELLS)
        self.register_buffer("row_id", cells // SIDE, persistent=False)
        self.register_buffer("col_id", cells % SIDE, persistent=False)
        self.register_buffer("vocab_token_ids", torch.arange(N_DIGITS), persistent=False)
        self.hidden_index = cfg.hidden_layer % (cfg.n_layers + 1)

    def forward_all(self, tokens: torch.Tensor) -> tuple[torch.Tensor, list[torch.Tensor]]:
        """tokens ``(B, 81)`` → logits ``(B, 81, 9)`` and hidden states of every layer
        (``n_layers + 1`` tensors ``(B, 81, D)``, embeddings first)."""
        assert tokens.ndim == 2 and tokens.shape[1] == N_CELLS, tokens.shape
        x = self.tok(tokens) + self.row(self.row_id) + self.col(self.col_id)
        hidden = [x]
        for block in self.blocks:
            x = block(x)
            hidden.append(x)
        return self.out(self.ln_f(x)), hidden

    @contextmanager
    def capture_attention(self):
        """While open, every forward appends the last block's head-averaged attention ``(B, 81, 81)`` to
        the yielded list (DAPD's dependency graph, :mod:`mdm_mi.mi.dapd`): the backbone states that it
        exposes its attention, and a caller takes it from the same pass."""
        seen: list[torch.Tensor] = []
        hook = self.blocks[-1].register_forward_hook(lambda block, args, out: seen.append(block.attention(args[0])))
        try:
            yield seen
        finally:
            hook.remove()

    def forward(self, tokens: torch.Tensor) -> BackboneOutput:
        """Backbone protocol: logits ``(B, 81, 9)`` and the chosen layer's hidden ``(B, 81, D)``."""
        logits, hidden = self.forward_all(tokens)
        return BackboneOutput(logits=logits, hidden=hidden[self.hidden_index])


def n_params(model: nn.Module) -> int:
    """Number of trainable parameters."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


DOMAIN = "sudoku"


def load_sudoku_model(directory, device: str = "cpu", meta: dict | None = None) -> tuple[SudokuMDM, dict]:
    """Load a Sudoku checkpoint (safetensors, never unpickled) → (model in eval mode, meta). Verbs reach
    it through :func:`mdm_mi.models.loading.load_model`, which passes the ``meta`` it read."""
    state, meta = load_checkpoint(directory, domain=DOMAIN, meta=meta)
    try:
        model = SudokuMDM(ModelConfig(**meta["model"]))
        model.load_state_dict(state)
    except (KeyError, TypeError, ValueError, RuntimeError) as exc:
        raise CheckpointError(f"checkpoint {directory} does not match the Sudoku model: {exc}") from None
    return model.to(device).eval(), meta
