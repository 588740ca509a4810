"""A noisy-MI "head" for the exact testbed: the exact pairwise MI plus noise at a head's error level.

A trained MI head's error is a fixed function of the context: the same partial sequence always gets the
same Î. The noise here is the same kind of thing, so that the sampler's choice of positions stays a
deterministic function of the current partial state and q(x) stays exact (:mod:`mdm_mi.testbed.exact_kl`):

    Î_ij = max(0, I_ij + σ · z_ij(context)),

``z_ij`` a standard normal drawn by hashing (the tokens of the row, min(i, j), max(i, j), a seed), so
symmetric in (i, j) and identical whenever the context recurs. σ is set per regime so that the Pearson
correlation of Î with I over random contexts is the head's (:func:`calibrate_sigma`, target
:data:`HEAD_PEARSON`).
"""

from __future__ import annotations

import math

import torch

from mdm_mi.core.backbone import BackboneOutput
from mdm_mi.core.samplers import PairwiseFn
from mdm_mi.mi.fidelity import masked_pairs, pearson
from mdm_mi.testbed.chain import ChainBackbone

HEAD_PEARSON = 0.85  # the Pearson r of Î with the exact MI that the issue asks the noisy rule to have
SIGMA_BRACKET = (1e-4, 10.0)  # nats: the search range of σ
SIGMA_STEPS = 40  # bisection steps on log σ (the bracket shrinks by 2^40)

_MIX1, _MIX2 = 0xBF58476D1CE4E5B9 - (1 << 64), 0x94D049BB133111EB - (1 << 64)  # splitmix64, as int64
_GOLDEN = 0x9E3779B97F4A7C15 - (1 << 64)
_TWO53 = float(1 << 53)


def _shift_right(x: torch.Tensor, s: int) -> torch.Tensor:
    """Logical right shift of int64 ``x`` by ``s`` bits (torch's ``>>`` is arithmetic)."""
    return (x >> s) & ((1 << (64 - s)) - 1)


def _mix(x: torch.Tensor) -> torch.Tensor:
    """The splitmix64 finaliser on int64 tensors (multiplication wraps modulo 2^64)."""
    x = (x ^ _shift_right(x, 30)) * _MIX1
    x = (x ^ _shift_right(x, 27)) * _MIX2
    return x ^ _shift_right(x, 31)


def _uniform(key: torch.Tensor) -> torch.Tensor:
    """int64 keys → float64 uniforms in (0, 1] from their top 53 bits."""
    return (_shift_right(_mix(key), 11).double() + 1.0) / _TWO53


def hashed_normals(tokens: torch.Tensor, seed: int) -> torch.Tensor:
    """``(B, N)`` token rows → ``(B, N, N)`` float64 standard normals, symmetric, a deterministic function
    of (the row's tokens, the unordered pair, ``seed``) (Box–Muller on two hashed uniforms)."""
    b, n = tokens.shape
    site_keys = _mix(torch.arange(n, dtype=torch.long) * _GOLDEN + seed)
    row = _mix((_mix(tokens.long() + 1 + site_keys) * (torch.arange(n) + 1)).sum(1) + seed)  # (B,)
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
    pair = torch.minimum(i, j) * n + torch.maximum(i, j)  # (N, N)
    key = _mix(row[:, None, None] + _mix(pair * _GOLDEN + 1))
    u1, u2 = _uniform(key), _uniform(key ^ _GOLDEN)
    return torch.sqrt(-2.0 * u1.log()) * torch.cos(2 * math.pi * u2)


def noisy_mi(exact: torch.Tensor, tokens: torch.Tensor, sigma: float, seed: int) -> torch.Tensor:
    """``(B, N, N)`` exact MI and the ``(B, N)`` tokens it was computed on → Î, same shape, ≥ 0, 0 on the
    diagonal."""
    noisy = (exact.double() + sigma * hashed_normals(tokens, seed)).clamp_min(0.0)
    return noisy * (1 - torch.eye(exact.shape[-1], dtype=noisy.dtype))


def noisy_pairwise_fn(model: ChainBackbone, sigma: float, seed: int) -> PairwiseFn:
    """``fn(output, masked, tokens (B, L)) → (B, L, L)`` float32: :func:`noisy_mi` of the exact MI given
    the tokens of the pass."""

    @torch.inference_mode()
    def fn(output: BackboneOutput, masked: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        return noisy_mi(model.pair_mi(tokens), tokens, sigma, seed).float()

    return fn


def random_contexts(model: ChainBackbone, instance: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
    """``(B,)`` instances → ``(B, 1 + N)`` contexts: an exact draw from each p_k, each site masked with
    its row's probability t ~ U(0, 1)."""
    x = model.chain.sample(instance, generator)
    t = torch.rand(len(x), 1, generator=generator, dtype=torch.float64)
    masked = torch.rand(x.shape, generator=generator, dtype=torch.float64) < t
    return model.rows(instance, torch.where(masked, model.mask_id, x))


def calibrate_sigma(model: ChainBackbone, contexts: torch.Tensor, seed: int,
                    target: float = HEAD_PEARSON) -> tuple[float, float]:
    """σ at which Pearson(Î, I) over the masked pairs of ``contexts (B, L)`` is ``target`` (bisection on
    log σ; r falls as σ grows) → (σ, the r it gives)."""
    pairs = masked_pairs(contexts == model.mask_id)
    truth, z = model.pair_mi(contexts)[pairs], hashed_normals(contexts, seed)[pairs]
    r_at = lambda s: pearson((truth + s * z).clamp_min(0.0), truth)
    lo, hi = (math.log(s) for s in SIGMA_BRACKET)
    for _ in range(SIGMA_STEPS):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if r_at(math.exp(mid)) > target else (lo, mid)
    sigma = math.exp((lo + hi) / 2)
    return sigma, r_at(sigma)
