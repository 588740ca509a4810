"""The quality head: P(the token at each position is right) from one pass of the frozen backbone.

Per position i the head reads the backbone's hidden state h_i ``(D,)`` and four numbers t_i from the
same pass's logits (:func:`token_features`): whether i is masked, log of its top-1 probability, its
entropy, and the log-probability of the token it holds (0 when masked). A linear map to ``width``,
``layers`` pre-norm self-attention blocks (so a token can be judged against the others, e.g. a digit
against its row) and a linear read-out, plus a direct linear term in t_i (so that the head starts as a
logistic regression on the backbone's own confidence, which it must beat), give one logit per position:

    q_i = σ( blocks(W_in [h_i; t_i])_i · w_out + a · t_i + b ),   features ``(B, N, D + 4)`` → logits ``(B, N)``

For a masked position q_i is P(its most likely token is right); for a written one, P(the token it holds
is right). :func:`quality_fn` turns a head into what ``decode`` calls after each pass
(:data:`mdm_mi.core.sampler_spec.QUALITY`: the samplers of :mod:`mdm_mi.core.prism`).

    head = QualityHead(in_dim=backbone.hidden_dim + N_TOKEN_FEATURES, cfg=QualityConfig(64, 4, 1))
    q = torch.sigmoid(head(token_features(backbone, backbone(tokens), tokens)))   # (B, N)
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path

import torch
from torch import nn

from mdm_mi.core.backbone import Backbone, BackboneOutput, logit_index
from mdm_mi.infra.checkpoint import MODEL_FINGERPRINT, CheckpointError, load_checkpoint, read_meta, save_checkpoint
from mdm_mi.infra.errors import InputError

DOMAIN = "quality_head"
N_TOKEN_FEATURES = 4  # masked, log top-1 probability, entropy, log p of the held token
FF_MULT = 2  # each block's feed-forward width, in units of the head's width


@dataclass(frozen=True)
class QualityConfig:
    """The head's shape: ``width`` of its blocks, attention ``heads`` per block, ``layers`` blocks (0: a
    per-position MLP that never looks at the other tokens)."""

    width: int
    heads: int
    layers: int

    def __post_init__(self):
        if self.width < 1 or self.heads < 1 or self.layers < 0 or self.width % self.heads:
            raise InputError(f"quality head: width {self.width} must be a positive multiple of heads {self.heads}, "
                             f"layers {self.layers} >= 0")


def token_features(backbone: Backbone, out: BackboneOutput, tokens: torch.Tensor) -> torch.Tensor:
    """``(B, N, D + 4)`` float32: the pass's hidden states and, per position, [masked, log top-1 prob,
    entropy (nats), log p of the token held (0 when masked or not a vocabulary token)]."""
    logp = torch.log_softmax(out.logits.float(), -1)  # (B, N, V)
    masked = tokens == backbone.mask_id
    held = logit_index(backbone.vocab_token_ids, tokens)  # (B, N), -1 off the vocabulary
    own = logp.gather(-1, held.clamp_min(0)[..., None])[..., 0].masked_fill(masked | (held < 0), 0.0)
    entropy = -(logp.exp() * logp).sum(-1)
    extra = torch.stack([masked.float(), logp.amax(-1), entropy, own], dim=-1)
    return torch.cat([out.hidden.float(), extra], dim=-1)


class QualityHead(nn.Module):
    """features ``(B, N, in_dim)`` → ``(B, N)`` logits of "the token here is right"."""

    def __init__(self, in_dim: int, cfg: QualityConfig):
        super().__init__()
        self.in_dim, self.cfg = in_dim, cfg
        self.inp = nn.Sequential(nn.LayerNorm(in_dim), nn.Linear(in_dim, cfg.width))
        self.blocks = nn.ModuleList(
            nn.TransformerEncoderLayer(cfg.width, cfg.heads, FF_MULT * cfg.width, dropout=0.0, batch_first=True,
                                       norm_first=True) for _ in range(cfg.layers))
        self.out = nn.Sequential(nn.LayerNorm(cfg.width), nn.Linear(cfg.width, 1))
        self.direct = nn.Linear(N_TOKEN_FEATURES, 1)  # the logistic regression on the backbone's own signals

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        x = self.inp(features)
        for block in self.blocks:
            x = block(x)
        return (self.out(x) + self.direct(features[..., -N_TOKEN_FEATURES:]))[..., 0]


def quality_fn(head: QualityHead, backbone: Backbone):
    """``fn(output, masked, tokens) → (B, N)`` P(right) from the same pass's output (no extra backbone
    call): what ``decode`` hands a quality-reading sampler as ``view.quality``. Puts the head in eval mode;
    it must be on the backbone's device."""
    head.eval()

    @torch.inference_mode()
    def fn(output: BackboneOutput, masked: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(head(token_features(backbone, output, tokens)))

    return fn


def save_quality_head(head: QualityHead, directory: str | Path, meta: dict) -> None:
    """``directory/model.safetensors`` + ``meta.json`` (domain ``quality_head``, the config, ``meta``)."""
    save_checkpoint(head, directory, {**meta, "domain": DOMAIN, "in_dim": head.in_dim, "head": asdict(head.cfg)})


def load_quality_head(directory: str | Path, model_fingerprint: str | None = None, device="cpu") -> QualityHead:
    """The head saved in ``directory`` (eval mode); with ``model_fingerprint``, refused (one line) unless it
    was trained on that model."""
    meta = read_meta(directory)
    if meta.get("domain") != DOMAIN:
        raise CheckpointError(f"{directory} is not a quality head (domain {meta.get('domain')!r})")
    if model_fingerprint is not None and meta.get(MODEL_FINGERPRINT) != model_fingerprint:
        raise CheckpointError(f"quality head {directory} was trained on another model (fingerprint "
                              f"{meta.get(MODEL_FINGERPRINT)}), not on {model_fingerprint}")
    state, meta = load_checkpoint(directory, domain=DOMAIN, meta=meta)
    try:
        head = QualityHead(int(meta["in_dim"]), QualityConfig(**meta["head"]))
        head.load_state_dict(state)
    except (KeyError, TypeError, ValueError, RuntimeError) as exc:
        raise CheckpointError(f"checkpoint {directory} does not match the quality head: {exc}") from None
    return head.to(device).eval()
