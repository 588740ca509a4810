"""The testbed's named regimes: Potts chains built from a few named constants each.

    chain = build_chain(REGIMES["sparse-pairs"], n_instances=1000, seed=0)

Every regime is a family of chain instances (one per prompt, as a benchmark has one per puzzle): each has
its own random fields ``h_i(a) ~ N(0, field_scale²)`` (so entropy order is neither position order nor
the same from one instance to the next), and all share one coupling pattern on the bonds (i, i + 1):

- ``sparse-pairs``: independent high-entropy sites with a few strongly coupled pairs — the bonds
  (0, 1), (8, 9), (16, 17), ... carry a ferromagnetic ``J(a, b) = J·[a = b]``, every other bond 0, so
  every site is near-uniform, the coupled pairs share ~0.9 nats and all other pairs are independent.
- ``weak-uniform``: every bond weakly ferromagnetic: small MI everywhere, nothing independent.
- ``strong-uniform``: every bond strongly ferromagnetic: strong MI everywhere along the chain.
- ``hard``: a hard constraint on every bond, neighbours differ (a proper 3-colouring of the path), as a
  penalty of :data:`HARD_PENALTY` nats per violation, so that p stays positive everywhere and KL(q‖p)
  finite (p's mass on sequences that break a constraint is stated per regime by :func:`valid_mass`).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from mdm_mi.testbed.chain import PottsChain

HARD_PENALTY = 12.0  # nats per broken constraint: exp(−12) ≈ 6e−6 of a valid neighbour's weight
N_SITES = 40  # sites of every regime (the issue asks for 20–60)
FIELD_SCALE = 1.0  # sd of the random fields: site entropies spread over ~0.5–1.4 nats (4 states)
PAIR_EVERY = 8  # sparse-pairs: a coupled bond every 8 sites (5 pairs among 40 sites)
STRONG_J = 3.0  # a strongly coupled pair: P(same state) ≈ 0.87 with 4 states, MI ≈ 0.9 nats
WEAK_J = 0.5  # weak uniform coupling: MI between neighbours ≈ 0.02 nats
UNIFORM_STRONG_J = 2.0  # strong uniform coupling on every bond
KINDS = ("pairs", "uniform", "hard")


@dataclass(frozen=True)
class Regime:
    """A chain recipe. kind: ``pairs`` (strength J on every ``pair_every``-th bond), ``uniform`` (J on
    every bond, ferromagnetic) or ``hard`` (neighbours differ, −``HARD_PENALTY`` per violation)."""

    name: str
    kind: str
    n_sites: int
    n_states: int
    coupling: float
    field_scale: float = FIELD_SCALE
    pair_every: int = PAIR_EVERY
    description: str = ""

    def __post_init__(self):
        if self.kind not in KINDS:
            raise ValueError(f"regime kind must be one of {KINDS}, got {self.kind!r}")


REGIMES: dict[str, Regime] = {r.name: r for r in (
    Regime("sparse-pairs", "pairs", N_SITES, 4, STRONG_J,
           description="independent high-entropy sites, 5 strongly coupled pairs"),
    Regime("weak-uniform", "uniform", N_SITES, 4, WEAK_J, description="weak coupling on every bond"),
    Regime("strong-uniform", "uniform", N_SITES, 4, UNIFORM_STRONG_J, description="strong coupling on every bond"),
    Regime("hard", "hard", N_SITES, 3, HARD_PENALTY, description="hard constraint: neighbours differ (3 states)"),
)}


def build_chain(regime: Regime, n_instances: int, seed: int = 0) -> PottsChain:
    """``n_instances`` chains of the regime: fields ``(K, N, q)`` drawn from ``seed`` (one instance per
    prompt), the couplings of its kind shared (float64)."""
    g = torch.Generator().manual_seed(seed)
    n, q = regime.n_sites, regime.n_states
    fields = regime.field_scale * torch.randn(n_instances, n, q, generator=g, dtype=torch.float64)
    same = torch.eye(q, dtype=torch.float64).expand(n - 1, q, q)
    if regime.kind == "hard":
        couplings = -regime.coupling * same
    else:
        bonds = torch.ones(n - 1, dtype=torch.float64)
        if regime.kind == "pairs":
            bonds = (torch.arange(n - 1) % regime.pair_every == 0).double()
        couplings = regime.coupling * bonds[:, None, None] * same
    return PottsChain(fields, couplings.contiguous())


def valid_mass(regime: Regime, chain: PottsChain, instance: torch.Tensor) -> torch.Tensor:
    """``(B,)`` instances → ``(B,)`` p_k's total mass on sequences that break no constraint (1 without
    constraints): the chain with broken constraints weighted 0 instead of exp(−penalty), Z_valid / Z."""
    if regime.kind != "hard":
        return torch.ones(len(instance), dtype=torch.float64)
    strict = torch.where(chain.couplings < 0, 0.0, torch.exp(chain.couplings))
    return torch.exp(_log_z(chain.fields[instance], strict) - chain.log_partition(instance))


def _log_z(fields: torch.Tensor, edges: torch.Tensor) -> torch.Tensor:
    """log Σ_x Π_i exp(h_i(x_i)) Π_i edges_i(x_i, x_{i+1}) for fields ``(B, N, q)`` and edge weights
    ``(N−1, q, q)`` ≥ 0 (zeros allowed), by the plain forward recursion → ``(B,)``."""
    a, log_z = torch.exp(fields[:, 0]), torch.zeros(len(fields), dtype=fields.dtype)
    for i in range(fields.shape[1]):
        if i:
            a = (a[:, :, None] * edges[i - 1]).sum(1) * torch.exp(fields[:, i])
        log_z = log_z + a.sum(-1).log()
        a = a / a.sum(-1, keepdim=True)
    return log_z
