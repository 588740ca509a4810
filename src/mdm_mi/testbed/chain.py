"""Exact Potts chains: every quantity a sampler or an MI head could want, computed without estimation.

A family of K chain instances over N sites with q states each: instance k has
``p_k(x) ∝ exp(Σ_i h_ki(x_i) + Σ_i J_i(x_i, x_{i+1}))``, its own fields ``h (K, N, q)`` and the shared
couplings ``J (N−1, q, q)`` between neighbours. Given evidence (a row of sites, some observed and the
rest masked, state id q), forward-backward message passing gives every site's conditional marginal and
every pair's conditional joint exactly, hence the pairwise MI. :class:`ChainBackbone` presents the family
as a :class:`~mdm_mi.core.backbone.Backbone`, a row being (the instance's prompt token, the N sites) and
the logits the exact log conditional marginals, so the project's samplers and
:func:`~mdm_mi.core.samplers.decode` run on it unchanged, as on a puzzle with its clues.

    chain = PottsChain(fields, couplings)                  # (K, N, q), (N−1, q, q)
    marg = chain.marginals(sites, instance)                # (B, N, q); sites (B, N), instance (B,)
    mi = chain.pair_mi(sites, instance)                    # (B, N, N)
    x = chain.sample(instance, torch.Generator().manual_seed(0))  # (B, N): exact draws from p_k

All arithmetic is float64; messages are normalised at every site, so long chains neither overflow nor
underflow.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from mdm_mi.core.backbone import BackboneOutput, logit_index
from mdm_mi.core.remask import check_rows, pending_logp
from mdm_mi.core.samplers import PairwiseFn

ZERO_PROB_LOGIT = -1e4  # the logit of a state of probability 0 (an observed site's other states): finite,
#                         so StepView's entropy stays 0·(−1e4) = 0 instead of 0·(−inf) = NaN; exp(−1e4) is 0
#                         in float32


@dataclass(frozen=True)
class Messages:
    """Forward-backward messages of a batch of evidence rows, normalised per site.

    alpha: ``(B, N, q)`` ∝ p(x_i, evidence at sites ≤ i), the evidence at i included.
    beta:  ``(B, N, q)`` ∝ p(evidence at sites > i | x_i).
    log_z: ``(B,)`` log of the unnormalised total mass of the evidence (log Z when nothing is observed).
    """

    alpha: torch.Tensor
    beta: torch.Tensor
    log_z: torch.Tensor


@dataclass(frozen=True)
class PottsChain:
    """fields ``(K, N, q)`` float64 h_ki(a) of K instances; couplings ``(N−1, q, q)`` float64 J_i(a, b),
    finite, shared. The mask (an unobserved site) is state id ``q``."""

    fields: torch.Tensor
    couplings: torch.Tensor

    def __post_init__(self):
        _, n, q = self.fields.shape
        assert self.couplings.shape == (n - 1, q, q), (self.fields.shape, self.couplings.shape)
        assert torch.isfinite(self.fields).all() and torch.isfinite(self.couplings).all()

    @property
    def n_instances(self) -> int:
        return self.fields.shape[0]

    @property
    def n_sites(self) -> int:
        return self.fields.shape[1]

    @property
    def n_states(self) -> int:
        return self.fields.shape[2]

    def masked(self, n: int) -> torch.Tensor:
        """``(n, N)`` rows of masked sites."""
        return torch.full((n, self.n_sites), self.n_states, dtype=torch.long)

    def potentials(self, sites: torch.Tensor, instance: torch.Tensor) -> torch.Tensor:
        """``(B, N)`` sites, ``(B,)`` instances → ``(B, N, q)`` site potentials exp(h_i(a)), zero off an
        observed value; each site's potential is scaled to max 1 (a constant: p is unchanged)."""
        h = self.fields[instance]
        psi = torch.exp(h - h.max(-1, keepdim=True).values)
        onehot = torch.nn.functional.one_hot(sites.clamp(max=self.n_states - 1), self.n_states).bool()
        return torch.where((sites != self.n_states)[..., None], psi * onehot, psi)

    def edges(self) -> torch.Tensor:
        """``(N−1, q, q)`` edge matrices exp(J_i(a, b)), each scaled to max 1."""
        return torch.exp(self.couplings - self.couplings.flatten(1).max(-1).values[:, None, None])

    def messages(self, sites: torch.Tensor, instance: torch.Tensor) -> Messages:
        """Forward-backward on ``(B, N)`` evidence rows of instances ``(B,)`` (a Python loop over sites)."""
        psi, m = self.potentials(sites, instance), self.edges()
        b, n, _ = psi.shape
        alpha, beta = torch.empty_like(psi), torch.ones_like(psi)
        log_z = torch.zeros(b, dtype=psi.dtype)
        a = psi[:, 0]
        for i in range(n):
            if i:
                a = (a[:, :, None] * m[i - 1]).sum(1) * psi[:, i]
            c = a.sum(-1)
            log_z = log_z + c.log()
            alpha[:, i] = a = a / c[:, None]
        for i in range(n - 2, -1, -1):
            nb = (m[i] * (psi[:, i + 1] * beta[:, i + 1])[:, None, :]).sum(-1)
            beta[:, i] = nb / nb.sum(-1, keepdim=True)
        scale = self.fields[instance].max(-1).values.sum(-1) + self.couplings.flatten(1).max(-1).values.sum()
        return Messages(alpha=alpha, beta=beta, log_z=log_z + scale)

    def marginals(self, sites: torch.Tensor, instance: torch.Tensor) -> torch.Tensor:
        """``(B, N)`` evidence → ``(B, N, q)`` exact conditional marginals p(x_i | evidence)."""
        msg = self.messages(sites, instance)
        joint = msg.alpha * msg.beta
        return joint / joint.sum(-1, keepdim=True)

    def pair_mi(self, sites: torch.Tensor, instance: torch.Tensor) -> torch.Tensor:
        """``(B, N)`` evidence → ``(B, N, N)`` exact I(x_i; x_j | evidence) in nats.

        By the Markov property two masked sites are independent given an observed site between them, so
        the MI is exactly 0 unless every site from i to j is masked (and on the diagonal). Inside such a
        run the joint of (i, j) is alpha_i · T_ij · beta_j with the transfer matrix
        T_ij = Π_{k=i}^{j−1} exp(J_k) D_{k+1} (D: the site potentials), grown one site at a time for every
        i at once (batched ``(B, N, q, q)`` products) up to the batch's longest masked run."""
        msg, psi, m = self.messages(sites, instance), self.potentials(sites, instance), self.edges()
        b, n, _ = psi.shape
        run = _masked_runs(sites == self.n_states)  # (B, N, N): i ≠ j and every site from i to j masked
        longest = int(run.any(0).sum(1).max()) if n > 1 else 0  # the largest j − i inside a run
        step = m[None] * psi[:, 1:, None, :]  # (B, N−1, q, q): exp(J_k) D_{k+1}
        joints, flat, transfer = [], [], step
        for d in range(1, longest + 1):
            if d > 1:
                transfer = torch.einsum("bnac,bncd->bnad", transfer[:, :-1], step[:, d - 1:])
                transfer = transfer / transfer.sum((-2, -1), keepdim=True)
            joints.append(msg.alpha[:, : n - d, :, None] * transfer * msg.beta[:, d:, None, :])
            flat.append(torch.arange(n - d) * (n + 1) + d)  # the pairs (i, i + d) in the flat N·N
        mi = torch.zeros(b, n * n, dtype=psi.dtype)
        if joints:
            mi[:, torch.cat(flat)] = _mutual_information(torch.cat(joints, 1))
        mi = mi.view(b, n, n)
        return torch.where(run, mi + mi.transpose(1, 2), 0.0)

    def log_prob(self, x: torch.Tensor, instance: torch.Tensor) -> torch.Tensor:
        """``(B, N)`` complete sequences of instances ``(B,)`` → ``(B,)`` exact log p(x)."""
        sites = torch.arange(self.n_sites)
        h = self.fields[instance[:, None], sites, x].sum(-1)
        return h + self.couplings[sites[:-1], x[:, :-1], x[:, 1:]].sum(-1) - self.log_partition(instance)

    def log_partition(self, instance: torch.Tensor) -> torch.Tensor:
        """``(B,)`` instances → ``(B,)`` log Z, the log total mass with nothing observed."""
        return self.messages(self.masked(len(instance)), instance).log_z

    def sample(self, instance: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """``(B,)`` instances → ``(B, N)`` long: one exact draw from each p_k (forward filtering, backward
        sampling)."""
        alpha, m = self.messages(self.masked(len(instance)), instance).alpha, self.edges()
        x = torch.empty(len(instance), self.n_sites, dtype=torch.long)
        probs = alpha[:, -1]
        for i in range(self.n_sites - 1, -1, -1):
            if i < self.n_sites - 1:
                probs = alpha[:, i] * m[i][:, x[:, i + 1]].T
            x[:, i] = torch.multinomial(probs / probs.sum(-1, keepdim=True), 1, generator=generator)[:, 0]
        return x

    def entropy(self, instance: torch.Tensor) -> torch.Tensor:
        """``(B,)`` instances → ``(B,)`` H(X) in nats, exactly: log Z − E_p[Σ h_i + Σ J_i], from the
        marginals and the neighbour joints with nothing observed."""
        empty = self.masked(len(instance))
        msg, psi = self.messages(empty, instance), self.potentials(empty, instance)
        marg = msg.alpha * msg.beta
        marg = marg / marg.sum(-1, keepdim=True)
        pair = msg.alpha[:, :-1, :, None] * self.edges() * (psi[:, 1:] * msg.beta[:, 1:])[:, :, None, :]
        pair = pair / pair.sum((-2, -1), keepdim=True)
        energy = (marg * self.fields[instance]).sum((1, 2)) + (pair * self.couplings).sum((1, 2, 3))
        return msg.log_z - energy


def _mutual_information(joint: torch.Tensor) -> torch.Tensor:
    """``(..., q, q)`` unnormalised joints → ``(...)`` their MI H_i + H_j − H_ij in nats (≥ 0)."""
    joint = joint / joint.sum((-2, -1), keepdim=True)
    xlogx = lambda p: torch.special.xlogy(p, p)
    pi, pj = joint.sum(-1), joint.sum(-2)
    return (xlogx(joint).sum((-2, -1)) - xlogx(pi).sum(-1) - xlogx(pj).sum(-1)).clamp_min(0.0)


def _masked_runs(masked: torch.Tensor) -> torch.Tensor:
    """``(B, N)`` bool → ``(B, N, N)`` bool: i ≠ j and every site from min(i, j) to max(i, j) is masked."""
    n = masked.shape[1]
    observed = torch.cat([torch.zeros_like(masked[:, :1], dtype=torch.long), (~masked).long().cumsum(1)], 1)
    i, j = torch.arange(n)[:, None], torch.arange(n)[None, :]
    lo, hi = torch.minimum(i, j), torch.maximum(i, j)
    return (observed[:, hi + 1] - observed[:, lo] == 0) & (lo != hi)


def site_entropy(marginals: torch.Tensor) -> torch.Tensor:
    """``(..., q)`` probabilities → ``(...)`` entropies in nats."""
    return -torch.special.xlogy(marginals, marginals).sum(-1)


class ChainBackbone:
    """A :class:`PottsChain` family as a :class:`~mdm_mi.core.backbone.Backbone`: the perfect masked model.

    A row is ``(1 + N,)``: position 0 holds instance k's prompt token ``q + 1 + k`` (never masked, like
    a clue), positions 1..N the sites (states ``0..q−1``, mask ``q``). ``__call__(tokens (B, 1 + N))`` →
    logits ``(B, 1 + N, q)`` float32, the exact log conditional marginals log p_k(x_i | the observed
    sites) (floored at :data:`ZERO_PROB_LOGIT`; zeros at position 0), and hidden ``(B, 1 + N, 1)`` zeros.
    """

    hidden_dim = 1

    def __init__(self, chain: PottsChain):
        self.chain = chain
        self.vocab_size = chain.n_states
        self.mask_id = chain.n_states
        self.vocab_token_ids = torch.arange(chain.n_states)
        self.special_ids = tuple(range(chain.n_states + 1, chain.n_states + 1 + chain.n_instances))

    def split(self, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``(B, 1 + N)`` rows → (instances ``(B,)``, sites ``(B, N)``)."""
        return tokens[:, 0] - (self.chain.n_states + 1), tokens[:, 1:]

    def prompts(self, instance: torch.Tensor) -> torch.Tensor:
        """``(B,)`` instances → ``(B, 1 + N)`` rows to decode: the prompt token, every site masked."""
        return self.rows(instance, self.chain.masked(len(instance)))

    def rows(self, instance: torch.Tensor, sites: torch.Tensor) -> torch.Tensor:
        """``(B,)`` instances and ``(B, N)`` sites → ``(B, 1 + N)`` rows."""
        return torch.cat([(instance + self.chain.n_states + 1)[:, None], sites], 1)

    def log_prob(self, tokens: torch.Tensor) -> torch.Tensor:
        """``(B, 1 + N)`` complete rows → ``(B,)`` exact log p_k(x)."""
        instance, sites = self.split(tokens)
        return self.chain.log_prob(sites, instance)

    @torch.inference_mode()
    def __call__(self, tokens: torch.Tensor) -> BackboneOutput:
        instance, sites = self.split(tokens)
        marg = self.chain.marginals(sites, instance)
        logits = torch.where(marg > 0, marg.log(), ZERO_PROB_LOGIT).clamp_min(ZERO_PROB_LOGIT).float()
        logits = torch.cat([torch.zeros_like(logits[:, :1]), logits], 1)
        return BackboneOutput(logits=logits, hidden=torch.zeros(*tokens.shape, self.hidden_dim))

    def pair_mi(self, tokens: torch.Tensor) -> torch.Tensor:
        """``(B, 1 + N)`` rows → ``(B, 1 + N, 1 + N)`` float64 exact pairwise MI (0 at the prompt)."""
        instance, sites = self.split(tokens)
        return torch.nn.functional.pad(self.chain.pair_mi(sites, instance), (1, 0, 1, 0))


def exact_pairwise_fn(model: ChainBackbone) -> PairwiseFn:
    """``fn(output, masked, tokens (B, 1 + N)) → (B, 1 + N, 1 + N)`` float32: the exact pairwise MI given
    the tokens of the pass (the exact-MI oracle, at no backbone pass)."""

    @torch.inference_mode()
    def fn(output: BackboneOutput, masked: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        return model.pair_mi(tokens).float()

    return fn


def exact_quality_fn(model: ChainBackbone) -> PairwiseFn:
    """``fn(output, masked, tokens (B, 1 + N)) → (B, 1 + N)`` float64: the exact stand-in of a quality head
    (:mod:`mdm_mi.core.prism`) on a chain, where no one completion is "right": a masked site's top-1
    probability given the tokens of the pass, a written site's probability given every other token (its
    leave-one-out conditional, one extra row per site, not counted as a pass), 1 at the condition token."""

    @torch.inference_mode()
    def fn(output: BackboneOutput, masked: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
        held = logit_index(model.vocab_token_ids, tokens)
        sites = ~masked & (held >= 0)
        rows, where = check_rows(tokens, sites, model.mask_id)
        loo = pending_logp(model(rows).logits, where, held[where[:, 0], where[:, 1]], tokens.shape) if len(where) else None
        quality = torch.softmax(output.logits.double(), -1).amax(-1).where(masked, 1.0)
        return quality if loo is None else torch.where(sites, loo.exp(), quality)

    return fn
