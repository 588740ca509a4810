"""The exact probability q(x) with which a sampler draws a sequence, by replaying its path, and the KL
estimates built on it.

Every sampler of the project chooses WHICH masked positions to unmask from the current partial state
alone (entropies, margins, a pairwise matrix that is itself a function of the state), and
:func:`~mdm_mi.core.samplers.decode` at temperature 1 then draws each chosen position independently from
its marginal. So a complete sequence x has one decoding path, and the sampler draws it with probability

    q(x) = Π_t Π_{i ∈ S_t} p_model(x_i | C_t),

S_t the positions the sampler's own ``select`` chooses at pass t on the partial state C_t (x's values at
the positions unmasked before t). :func:`replay` walks that path for a batch of x with the sampler's own
``select`` (no re-implementation of any rule), mirroring ``decode`` pass by pass, and returns log q(x)
and the passes the path takes (it works for any backbone). With an exact model
(:class:`~mdm_mi.testbed.chain.ChainBackbone`),
log p(x) − log q(x) is exact per sample: KL(p‖q) = E_{x~p}[log p − log q] is a Monte Carlo mean of
exact terms, and on a model small enough to enumerate it is a finite sum (:func:`enumerate_kl`).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass

import numpy as np
import torch

from mdm_mi.core.backbone import Backbone, forward_chunked, logit_index
from mdm_mi.core.remask import Check, forward_with_checks
from mdm_mi.core.samplers import DecodeResult, PairwiseFn, Sampler, decode, step_view
from mdm_mi.core.view import History, drift
from mdm_mi.infra.flags import Decoding
from mdm_mi.testbed.chain import ChainBackbone

SAMPLING = Decoding(temperature=1.0)  # the sampled distribution is q only at temperature 1
ENUMERATION_LIMIT = 20_000  # completions: enumerate_kl refuses larger models


@dataclass(frozen=True)
class Replay:
    """log_q ``(B,)`` float64 log q(x); passes ``(B,)`` long, the forward passes of x's path."""

    log_q: torch.Tensor
    passes: torch.Tensor


def draw_decodes(model: Backbone, prompts: torch.Tensor, sampler: Sampler, generator: torch.Generator,
         pairwise_fn: PairwiseFn | None = None) -> DecodeResult:
    """One sequence per row of ``prompts (B, L)`` from ``sampler``, by the project's own :func:`decode` at
    temperature 1."""
    return decode(model, prompts, sampler, generator, decoding=SAMPLING, pairwise_fn=pairwise_fn)


@torch.inference_mode()
def replay(model: Backbone, prompts: torch.Tensor, x: torch.Tensor, sampler: Sampler,
           pairwise_fn: PairwiseFn | None = None) -> Replay:
    """log q(x) for complete rows ``x (B, L)`` (token ids; equal to ``prompts (B, L)`` off its masks) under
    ``sampler`` decoding ``prompts`` at temperature 1, by replaying ``sampler.select`` along x's unique
    path: each pass sees exactly the view ``decode`` would build (same backbone call on the still-active
    rows, same :meth:`StepView.from_logits`, same pairwise source), adds log softmax(logits)[x_i] of every
    chosen i (the probability with which ``decode``'s Gumbel-max draw gives x_i) and writes x there."""
    assert prompts.shape == x.shape and bool(((prompts == model.mask_id) | (prompts == x)).all())
    target = logit_index(model.vocab_token_ids, x, missing=0)  # (B, L) logit index of each token (0 off the vocabulary: never chosen)
    tokens = prompts.clone()
    log_q = torch.zeros(len(x), dtype=torch.float64)
    passes = torch.zeros(len(x), dtype=torch.long)
    history = History(len(x))  # each row's previous logits, for a sampler that reads the drift (as decode)
    for step in range(x.shape[1] + 1):
        masked_all = tokens == model.mask_id
        active = masked_all.any(1).nonzero().squeeze(1)
        if active.numel() == 0:
            break
        sub, masked = tokens[active], masked_all[active]
        out = forward_chunked(model, sub)
        passes[active] += 1
        moved = history.drift(out.logits, active, masked) if sampler.needs_history else None
        chosen = sampler.select(step_view(sampler, out, masked, sub, pairwise_fn, step, moved)) & masked
        logp = torch.log_softmax(out.logits.float().double(), dim=-1).gather(-1, target[active, :, None])[..., 0]
        log_q[active] += torch.where(chosen, logp, 0.0).sum(1)
        tokens[active] = torch.where(chosen, x[active], sub)
    return Replay(log_q=log_q, passes=passes)


@dataclass(frozen=True)
class Exact:
    """The sampler's output distribution on one prompt, enumerated: KL both ways, Σ q (1 up to
    round-off) and the expected passes E_q[passes], all exact."""

    kl_pq: float
    kl_qp: float
    q_total: float
    passes: float


def completions(prompt: torch.Tensor, n_states: int) -> torch.Tensor:
    """``(L,)`` prompt → ``(q^M, L)`` every filling of its M masked positions with states ``0..q−1``."""
    holes = (prompt == n_states).nonzero().squeeze(1)
    if n_states ** len(holes) > ENUMERATION_LIMIT:
        raise ValueError(f"{n_states}^{len(holes)} completions is too many to enumerate (limit {ENUMERATION_LIMIT})")
    fill = torch.tensor(list(itertools.product(range(n_states), repeat=len(holes))), dtype=torch.long)
    rows = prompt.expand(len(fill), -1).clone()
    rows[:, holes] = fill
    return rows


def enumerate_kl(model: ChainBackbone, prompt: torch.Tensor, sampler: Sampler,
                 pairwise_fn: PairwiseFn | None = None, limit: int = ENUMERATION_LIMIT) -> Exact:
    """Exact KL(p‖q), KL(q‖p), Σ_x q(x) and E_q[passes] on one ``(1 + N,)`` prompt of a
    :class:`ChainBackbone`, by summing over every completion (tiny models): q(x) by replaying x's one
    path, or for a remasking sampler (many paths reach one x) by :func:`enumerate_paths` (at most ``limit``
    states per pass)."""
    x = completions(prompt, model.chain.n_states)
    log_p = model.log_prob(x)
    if sampler.remasks:
        paths = enumerate_paths(model, prompt, sampler, pairwise_fn, limit)
        q = torch.tensor([paths.q.get(tuple(row.tolist()), 0.0) for row in x], dtype=torch.float64)
        log_q, passes = q.log(), paths.passes
    else:
        rep = replay(model, prompt.expand_as(x), x, sampler, pairwise_fn)
        log_q, q = rep.log_q, rep.log_q.exp()
        passes = float((q * rep.passes.double()).sum())
    p = log_p.exp()
    kl_qp = torch.where(q > 0, q * (log_q - log_p), 0.0)
    return Exact(kl_pq=float((p * (log_p - log_q)).sum()), kl_qp=float(kl_qp.sum()), q_total=float(q.sum()),
                 passes=passes)


@dataclass(frozen=True)
class Paths:
    """A sampler's output distribution on one prompt by enumerating its paths: ``q`` completion (a tuple
    of token ids) → probability, ``passes`` E_q[passes], ``states`` how many partial states were visited."""

    q: dict[tuple, float]
    passes: float
    states: int


@torch.inference_mode()
def enumerate_paths(model: Backbone, prompt: torch.Tensor, sampler: Sampler, pairwise_fn: PairwiseFn | None = None,
                    limit: int = ENUMERATION_LIMIT) -> Paths:
    """Every path ``decode`` can take from one ``(L,)`` prompt at temperature 1, remasking included: a state
    is the tokens, the pending tokens and their draft log-probabilities (:mod:`mdm_mi.core.remask`); at each
    pass the sampler's own ``select``, ``remask`` and ``suspects`` act on the view ``decode`` builds (the
    states of one pass in one batch, as ``decode`` batches its rows), and every joint value of the drawn
    positions branches with the product of their marginals. States reached by several paths merge.
    One-line ``ValueError`` past ``limit`` states in one pass."""
    frontier = {(tuple(prompt.tolist()), (), (), ()): 1.0}  # tokens, pending, their priors, previous tokens
    q: dict[tuple, float] = {}
    passes, seen = 0.0, 0
    for step in range(prompt.shape[0] + 1):
        if not frontier:
            break
        if len(frontier) > limit:
            raise ValueError(f"{len(frontier)} decoding states at pass {step}: too many to enumerate (limit {limit})")
        seen += len(frontier)
        nxt: dict[tuple, float] = {}
        for state, prob in _branches(model, frontier, sampler, pairwise_fn, step, prompt == model.mask_id):
            if model.mask_id in state[0]:
                nxt[state] = nxt.get(state, 0.0) + prob
            else:
                q[state[0]] = q.get(state[0], 0.0) + prob
                passes += prob * (step + 1)
        frontier = nxt
    return Paths(q=q, passes=passes, states=seen)


def _branches(model: Backbone, frontier: dict[tuple, float], sampler: Sampler, pairwise_fn: PairwiseFn | None,
              step: int, free: torch.Tensor):
    """Yield (next state, its probability along this branch) of one pass of ``decode`` from every state
    (tokens, pending positions, their draft log-probabilities → probability) of ``frontier``; one backbone
    call for them all. ``free (L,)``: the prompt's masked positions (a written token is one of them, unmasked)."""
    states, probs = list(frontier), list(frontier.values())
    tokens = torch.tensor([s[0] for s in states])
    masked = tokens == model.mask_id
    pend = torch.zeros_like(masked)
    prior = torch.full(masked.shape, float("nan"), dtype=torch.float64)
    for b, (_, pending, logps, _) in enumerate(states):
        pend[b, list(pending)] = True
        prior[b, list(pending)] = torch.tensor(logps, dtype=torch.float64)
    out, logp = forward_with_checks(model, tokens, pend, None)
    moved = None
    if sampler.needs_history:  # the previous pass's logits, of the tokens the state came from
        previous = forward_chunked(model, torch.tensor([s[3] for s in states])).logits if step > 0 else None
        moved = drift(out.logits, previous, masked)
    view = step_view(sampler, out, masked, tokens, pairwise_fn, step, moved)
    chosen = sampler.select(view) & masked
    back, suspects = torch.zeros_like(masked), torch.zeros_like(masked)
    if sampler.remasks:
        nan = torch.full(masked.shape, float("nan"), dtype=torch.float64)
        written = free & ~masked
        back = sampler.remask(Check(pend, nan if logp is None else logp, prior, chosen, view, written)) & written
        suspects = sampler.suspects(view, chosen) & chosen
    log_marg = torch.log_softmax(out.logits.double(), -1)
    vocab = torch.as_tensor(model.vocab_token_ids).tolist()
    for b in range(len(states)):
        where = chosen[b].nonzero()[:, 0].tolist()
        keep = suspects[b].nonzero()[:, 0].tolist()
        gone = back[b].nonzero()[:, 0].tolist()
        table = log_marg[b, where].tolist()  # (k, V)
        for values in itertools.product(range(len(vocab)), repeat=len(where)):
            row = list(states[b][0])
            drawn = {}
            for pos, v, lp in zip(where, values, table):
                row[pos] = vocab[v]
                drawn[pos] = lp[v]
            for pos in gone:
                row[pos] = model.mask_id
            came = states[b][0] if sampler.needs_history else ()
            yield (tuple(row), tuple(keep), tuple(drawn[j] for j in keep), came), probs[b] * math.exp(sum(drawn.values()))


def mean_se(values: np.ndarray) -> tuple[float, float]:
    """``(n,)`` → (mean, standard error of the mean)."""
    values = np.asarray(values, dtype=np.float64)
    return float(values.mean()), float(values.std(ddof=1) / math.sqrt(len(values))) if len(values) > 1 else 0.0
