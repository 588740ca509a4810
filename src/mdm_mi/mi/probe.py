"""Ground-truth pairwise mutual information by probing a masked discrete sequence model.

For one context ``tokens (N,)`` with masked set ``M`` (positions holding ``backbone.mask_id``), one
pass gives the marginals ``p_j = p(X_j | C)``; one more pass per probe ``(i, v)``, with ``X_i`` set to
``vocab_token_ids[v]``, gives ``c_iv,j = p(X_j | X_i = v, C)`` for every ``j`` at once. The paper's
ground-truth MI by probing then reads, for ``i != j`` in ``M``:

* entropy form ``I_ent[i, j] = H(p_j) - sum_v p_i(v) H(c_iv,j)``. It can be negative: a learned model
  is not self-consistent (``p_j`` differs from the mixture of its own conditionals);
* joint form ``I_joint[i, j] = sum_v p_i(v) KL(c_iv,j || q_ij)`` with ``q_ij = sum_v p_i(v) c_iv,j``:
  the mutual information of the joint ``P(v, w) = p_i(v) c_iv,j(w)``, hence ``>= 0``;
* label ``(I_joint + I_joint.T) / 2``: symmetric, zero diagonal, zero off ``M x M``.

``I_ent - I_joint = H(p_j) - H(q_ij)`` is the self-consistency gap reported as a diagnostic.

The same probes give DEMASK's dependence target (arXiv 2604.02560; ``docs/record/rivals.md``) at no extra
pass: the expected total-variation influence of revealing ``X_i`` on ``X_j``'s marginal,

* ``tv[i, j] = sum_v p_i(v) TV(c_iv,j, p_j)``, ``TV(a, b) = sum_w |a(w) - b(w)| / 2``, in ``[0, 1]``;

directed (row i revealed, column j influenced; ``tv != tv.T`` in general), streamed as a third
running sum beside the MI's two (:meth:`_Context._stream`). Its reference is the model's own
marginal ``p_j``, as DEMASK's "influence on the marginal" reads; for a self-consistent model
(``p_j = q_ij``) ``tv[i, j] = 0`` exactly when ``I_joint[i, j] = 0`` and, by Pinsker and Jensen,
``tv[i, j] <= sqrt(I_joint[i, j] / 2)``. Where probes are skipped (certified, top-k) the unprobed mass
``eps_i`` of row i contributes between 0 and ``eps_i`` (a TV is at most 1): ``tv`` is the probed part,
the interval's lower end, and ``tv_bound = eps_i`` its proven error (one-sided: the exact value lies in
``[tv, tv + tv_bound]``). Not the midpoint: the certified planner leaves a near-deterministic row
unprobed (``H(p_i) <= 2 tol``, so ``eps_i = 1``), whose midpoint would read 0.5 while, for a
self-consistent model, its true value is at most twice the mass off its top value. The bound is *not*
planned to stay under ``tol`` (the planner bounds the MI); it is reported instead.
:func:`probing_equation` is the paper's equation written as plain code, one pass at a time;
:func:`exact_mi` computes the same batched and spends the same ``1 + |M| V`` passes; :func:`certified_mi` skips the probes that cannot matter
and returns a label provably within ``tol`` of the exact one (the bound is proved in its docstring).
:func:`mdm_mi.mi.labeller.label_contexts` labels a shard of contexts drawn by :func:`mask_contexts`. All MI arithmetic
is float64 on the device of the input tokens; memory is ``O(batch_size |M| V)`` for any V (the probes stream
into two running sums, :meth:`_Context.measure`), so no float32 shortcut is needed for large vocabularies.

Example::

    import torch
    from mdm_mi.mi.probe import certified_mi, exact_mi, mask_contexts

    contexts, t = mask_contexts(solutions, model.mask_id, torch.Generator().manual_seed(0),
                                vocab_ids=model.vocab_token_ids)  # specials stay fixed
    exact = exact_mi(model, contexts[0])               # exact.label: (N, N) float64, nats
    cert = certified_mi(model, contexts[0], tol=1e-3)  # cert.passes <= exact.passes
    assert ((cert.label - exact.label).abs() <= cert.bound).all() and cert.bound.max() <= 1e-3
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from mdm_mi.core.backbone import Backbone, check_backbone, check_frame, check_output, forward_chunked

DEFAULT_TOL = 1e-3  # nats: certified max abs error of the label
DEFAULT_BATCH_SIZE = 256  # sequences per backbone call
LOG_FLOOR = -700.0  # log-probabilities are clamped here (p ~ 1e-304) so 0 * log 0 terms stay finite
ROUND_OFF = 1e-12  # float64 round-off allowance added to every certified bound
MIN_TOL = 4 * ROUND_OFF  # the certified probe's tolerance must exceed this


@dataclass(frozen=True)
class ProbeResult:
    """Pairwise MI of one context (nats, float64). All matrices are ``(N, N)`` and zero off ``M x M``.

    label:        ``(joint + joint.T) / 2``, the training target.
    joint:        joint-form MI ``I_joint[i, j]`` (certified: midpoint of its proven interval).
    entropy_form: entropy-form MI ``I_ent[i, j]`` (certified: uses probed values only, diagnostic).
    bound:        certified max abs error of ``label`` against the exact labeller (zeros for exact).
    passes:       sequences run through the backbone.
    masked:       ``(N,)`` bool, the masked set M.
    probed:       ``(N, V)`` bool, the values ``v`` whose probe ``X_i = v`` was run.
    gap_mean, gap_max: mean / max of ``|I_ent - I_joint|`` over probed masked pairs.
    asymmetry:    max ``|I_joint - I_joint.T|`` over masked pairs.
    tv:           DEMASK's directed target ``tv[i, j] = sum_v p_i(v) TV(c_iv,j, p_j)`` in ``[0, 1]``
                  (module docstring; certified / top-k: the probed part, its proven interval's lower end).
    tv_bound:     proven max abs error of ``tv`` against the exact one, one-sided (exact in
                  ``[tv, tv + tv_bound]``): ``eps_i`` by row i, the unprobed mass (zeros for exact).
    """

    label: torch.Tensor
    joint: torch.Tensor
    entropy_form: torch.Tensor
    bound: torch.Tensor
    passes: int
    masked: torch.Tensor
    probed: torch.Tensor
    gap_mean: float
    gap_max: float
    asymmetry: float
    tv: torch.Tensor
    tv_bound: torch.Tensor


def _log_probs(logits: torch.Tensor) -> torch.Tensor:
    """``(..., V)`` logits → float64 log-softmax, clamped at :data:`LOG_FLOOR`."""
    return torch.log_softmax(logits.double(), dim=-1).clamp_min(LOG_FLOOR)


def _entropy(p: torch.Tensor) -> torch.Tensor:
    """Entropy in nats of (sub-)distributions over the last axis, ``(..., V) → (...)``, 0 log 0 = 0."""
    return -torch.special.xlogy(p, p).sum(-1)


def _forward(backbone: Backbone, seqs: torch.Tensor, cols: torch.Tensor, batch_size: int) -> torch.Tensor:
    """Run ``seqs (P, N)`` in chunks of ``batch_size``; float64 log-probs at ``cols (m,)``: ``(P, m, V)``."""
    return torch.cat([_log_probs(forward_chunked(backbone, chunk).logits[:, cols]) for chunk in seqs.split(batch_size)])


def _chain_width(p: torch.Tensor, keep: torch.Tensor) -> torch.Tensor:
    """Chain-rule width ``h(eps) + eps H(X_i | X_i in S) = -sum_S p log p - (1-eps) log(1-eps)``.

    p ``(G, V)`` marginals of G rows ``X_i``, keep ``(G, V)`` the probed values (S is the rest) → ``(G,)``.
    """
    kept = (p * keep).sum(-1)
    return (_entropy(p * ~keep) - torch.special.xlogy(kept, kept)).clamp_min(0)


def _water_fill_width(q0: torch.Tensor, kept: torch.Tensor, h_q0: torch.Tensor) -> torch.Tensor:
    """Width ``W - (1-eps) H(q0)`` of the Y-marginal bound, broadcasting over leading axes.

    q0 ``(..., V)`` Y-marginal given a probed value, kept ``(...)`` probed mass ``1 - eps``, h_q0
    ``(...)`` = H(q0). ``W = max H((1-eps) q0 + r)`` over ``r >= 0`` of mass eps: water-filling the
    smallest entries to the level ``min_k (eps + sum of the k smallest) / k`` (the filled vector is
    majorised by every feasible one, so it maximises the Schur-concave entropy).
    """
    base = (kept[..., None] * q0).sort(-1).values
    water = (1 - kept).clamp_min(0)[..., None]
    counts = torch.arange(1, q0.shape[-1] + 1, device=q0.device, dtype=q0.dtype)
    level = ((water + base.cumsum(-1)) / counts).min(-1, keepdim=True).values
    return (_entropy(torch.maximum(base, level)) - kept * h_q0).clamp_min(0)


def _row_intervals(
    p: torch.Tensor, keep: torch.Tensor, mix: torch.Tensor, cond_kl: torch.Tensor, logp_cols: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Proven intervals for the joint-form MI of G rows i against every masked column j.

    p ``(G, V)`` = p_i; keep ``(G, V)`` bool, probed values K; mix ``(G, m, V)`` = sum_K p_i(v) c_iv,j;
    cond_kl ``(G, m)`` = sum_K p_i(v) KL(c_iv,j || p_j); logp_cols ``(m, V)`` log p_j. Returns
    ``(lower, width, gap)``, each ``(G, m)``: ``I_joint[i, j]`` lies in ``[lower, lower + width]`` and
    gap = H(p_j) - H(q0_j), the exact self-consistency gap when K is everything. The probed part
    ``L = sum_K p_i(v) KL(c_iv,j || q0)`` with ``q0 = mix / (1-eps)`` equals
    ``sum_K p_i(v) KL(c_iv,j || p_j) - (1-eps) KL(q0 || p_j)`` (expand the logarithms: the cross terms
    collect into q0), so two running sums over v carry everything and the probes stream; both terms
    are small where the MI is (the reference p_j is the model's own marginal), so little cancels in
    float64. See :func:`certified_mi` for the proof.
    """
    kept = (p * keep).sum(-1)  # (G,) = 1 - eps
    probed = keep.any(-1)  # (G,)
    q0 = mix / torch.where(probed, kept, 1)[:, None, None]  # (G, m, V); rows without a probe: zeros
    h_q0 = _entropy(q0)
    kl_q0 = -h_q0 - (q0 * logp_cols).sum(-1)  # (G, m) KL(q0 || p_j)
    lower = (cond_kl - kept[:, None] * kl_q0).clamp_min(0)  # >= 0 by Jensen; clamp drops round-off
    chain = _chain_width(p, keep)[:, None]  # (G, 1)
    width = torch.minimum(_water_fill_width(q0, kept[:, None], h_q0), chain)
    unprobed = ~probed[:, None]
    return (
        lower.masked_fill(unprobed, 0),
        torch.where(unprobed, chain, width),
        (_entropy(logp_cols.exp()) - h_q0).masked_fill(unprobed, 0),
    )


def _scatter(n: int, cols: torch.Tensor, mat: torch.Tensor) -> torch.Tensor:
    """Place an ``(m, m)`` matrix over the masked columns into a zero ``(N, N)`` matrix."""
    full = mat.new_zeros(n, n)
    full[cols[:, None], cols[None, :]] = mat
    return full


class _Context:
    """One context being probed: its masked columns ``cols (m,)``, marginals and pass count."""

    def __init__(self, backbone: Backbone, tokens: torch.Tensor, batch_size: int):
        if tokens.dim() != 1:
            raise ValueError(f"tokens must be one context (N,), got shape {tuple(tokens.shape)}")
        check_backbone(backbone)  # probed values are vocab_token_ids: never the mask or a special token
        check_frame(backbone, tokens)
        self.backbone, self.tokens, self.batch_size = backbone, tokens, batch_size
        self.cols = (tokens == backbone.mask_id).nonzero().squeeze(1)  # (m,)
        m, v = len(self.cols), backbone.vocab_size
        self.probed = torch.zeros(m, v, dtype=torch.bool, device=tokens.device)
        self.logp = torch.zeros(m, v, dtype=torch.float64, device=tokens.device)
        self.tv = torch.zeros(m, m, dtype=torch.float64, device=tokens.device)  # probed part of tv, rows i
        self.passes = 0

    def run_marginals(self) -> None:
        """One pass on the context itself: ``self.logp (m, V)`` = log p(X_j | C)."""
        out = forward_chunked(self.backbone, self.tokens[None])
        check_output(self.backbone, out, self.tokens[None])
        self.logp = _log_probs(out.logits[:, self.cols])[0]
        self.passes += 1

    def _probe(self, rows: torch.Tensor, values: torch.Tensor) -> torch.Tensor:
        """Passes with ``X_{cols[rows[k]]} = values[k]``: log p(X_cols | ...) ``(P, m, V)`` float64."""
        seqs = self.tokens.expand(len(rows), -1).clone()
        ids = self.backbone.vocab_token_ids.to(self.tokens.device)[values]
        seqs[torch.arange(len(rows), device=seqs.device), self.cols[rows]] = ids
        self.passes += len(rows)
        return _forward(self.backbone, seqs, self.cols, self.batch_size)

    def measure(self, keep: torch.Tensor):
        """Probe the values ``keep (m, V)``, rows in groups of ``batch_size``; returns ``(lower, width,
        gap)``, each ``(m, m)`` (rows i, columns j). Memory is ``O(batch_size m V)`` for any V: the
        probes stream (:meth:`_stream`), never a ``(V, m, V)`` block per row."""
        p, m, out, tv = self.logp.exp(), len(self.cols), [], []
        for start in range(0, m, self.batch_size):
            rows = torch.arange(start, min(m, start + self.batch_size), device=keep.device)
            mix, cond_kl, tv_rows = self._stream(rows, keep[rows], p[rows])
            out.append(_row_intervals(p[rows], keep[rows], mix, cond_kl, self.logp))
            tv.append(tv_rows)
        if tv:
            self.tv = torch.cat(tv)
        self.probed = keep.clone()
        if not out:
            return (self.logp.new_zeros(0, 0),) * 3
        return tuple(torch.cat(parts) for parts in zip(*out))

    def _stream(self, rows: torch.Tensor, keep: torch.Tensor, p: torch.Tensor):
        """Run the probes ``keep (G, V)`` of ``rows (G,)`` in chunks of ``batch_size`` and keep three
        running sums: ``mix (G, m, V) = sum_K p_i(v) c_iv,j``, ``cond_kl (G, m) = sum_K p_i(v)
        KL(c_iv,j || p_j)`` and ``tv (G, m) = sum_K p_i(v) TV(c_iv,j, p_j)``, float64 (every sum and the
        bound's ``ROUND_OFF`` stay float64)."""
        m, v = self.logp.shape
        mix = self.logp.new_zeros(len(rows), m, v)
        cond_kl = self.logp.new_zeros(len(rows), m)
        tv = self.logp.new_zeros(len(rows), m)
        marginal = self.logp.exp()
        for chunk in keep.nonzero().split(self.batch_size):  # (P, 2): row in the group, value
            local, values = chunk[:, 0], chunk[:, 1]
            log_cond = self._probe(rows[local], values)  # (P, m, V) log c_iv,j
            cond = log_cond.exp()
            weight = p[local, values]  # (P,) p_i(v)
            mix.index_add_(0, local, weight[:, None, None] * cond)
            cond_kl.index_add_(0, local, weight[:, None] * (cond * (log_cond - self.logp)).sum(-1))
            tv.index_add_(0, local, weight[:, None] * (cond - marginal).abs().sum(-1) / 2)
        return mix, cond_kl, tv

    def result(self, keep, lower, width, gap, certified: bool) -> ProbeResult:
        """Assemble the (N, N) matrices and the diagnostics from ``(m, m)`` row intervals."""
        n, m = len(self.tokens), len(self.cols)
        off = ~torch.eye(m, dtype=torch.bool, device=self.tokens.device)
        joint = (lower + width / 2) * off  # midpoint of [lower, lower + width]
        radius = width / 2 * off
        bound = ((radius + radius.T) / 2 + ROUND_OFF) * off if certified else torch.zeros_like(joint)
        informative = off & keep.any(1, keepdim=True)  # rows with at least one probe
        gaps = gap[informative].abs()
        masked = torch.zeros(n, dtype=torch.bool, device=self.tokens.device)
        masked[self.cols] = True
        probed = torch.zeros(n, self.probed.shape[1], dtype=torch.bool, device=self.tokens.device)
        probed[self.cols] = self.probed
        unprobed = (self.logp.exp() * ~keep).sum(-1)[:, None] * off  # (m, m) eps_i: 0 when every value is probed
        return ProbeResult(
            label=_scatter(n, self.cols, (joint + joint.T) / 2),
            joint=_scatter(n, self.cols, joint),
            entropy_form=_scatter(n, self.cols, joint + gap * informative),
            bound=_scatter(n, self.cols, bound),
            passes=self.passes,
            masked=masked,
            probed=probed,
            gap_mean=float(gaps.mean()) if gaps.numel() else 0.0,
            gap_max=float(gaps.max()) if gaps.numel() else 0.0,
            asymmetry=float((joint - joint.T).abs().max()) if m else 0.0,
            tv=_scatter(n, self.cols, self.tv * off),
            tv_bound=_scatter(n, self.cols, unprobed + ROUND_OFF * off if certified else unprobed),
        )


@torch.inference_mode()
def probing_equation(backbone: Backbone, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, int]:
    """The paper's exact MI by probing for one context, as plain code (one backbone call per pass):
    tokens ``(N,)`` with masked set M → ``(label, entropy_form, passes)``, two ``(N, N)`` float64
    matrices in nats and the pass count ``1 + |M|·V``.

    One pass on the context gives ``p_j = p(X_j | C)``; one pass per probe ``X_i = v`` (i ∈ M, each
    of the V values) gives ``c_iv,j = p(X_j | X_i = v, C)`` for every j. Then, for i ≠ j in M,

        I(X_i; X_j | C) = H(X_j | C) − H(X_j | X_i, C)        = H(p_j) − Σ_v p_i(v) H(c_iv,j)
                        = Σ_v p(X_i = v | C) KL(p(X_j | X_i = v, C) ‖ p(X_j | C)).

    The first line is ``entropy_form``. The KL line is used with ``q_ij = Σ_v p_i(v) c_iv,j`` in place
    of ``p_j`` (equal for a self-consistent model; with q it is the MI of the joint
    ``p_i(v) c_iv,j(w)``, never negative); ``label`` is its symmetrised ``(I + Iᵀ) / 2``, the head's
    training target. :func:`exact_mi` returns the same (``.label``, ``.entropy_form``, ``.passes``).
    """
    assert tokens.ndim == 1, tokens.shape
    ids = backbone.vocab_token_ids.to(tokens.device)

    def conditionals(seq: torch.Tensor) -> torch.Tensor:  # one pass: (N, V) float64 p(X_j | seq)
        return torch.softmax(backbone(seq[None]).logits[0].double(), dim=-1)

    p, passes = conditionals(tokens), 1
    masked = (tokens == backbone.mask_id).nonzero().flatten().tolist()
    n = len(tokens)
    joint = torch.zeros(n, n, dtype=torch.float64, device=tokens.device)
    entropy_form = torch.zeros_like(joint)
    for i in masked:
        probes = []
        for v in range(len(ids)):
            probe = tokens.clone()
            probe[i] = ids[v]
            probes.append(conditionals(probe))
        passes += len(ids)
        c = torch.stack(probes)  # (V, N, V): c[v, j] = p(X_j | X_i = v, C)
        for j in masked:
            if j == i:
                continue
            q = (p[i][:, None] * c[:, j]).sum(0)  # (V,) mixture of the conditionals
            entropy_form[i, j] = _entropy(p[j]) - (p[i] * _entropy(c[:, j])).sum()
            kl = (torch.special.xlogy(c[:, j], c[:, j]) - torch.special.xlogy(c[:, j], q)).sum(-1)  # (V,)
            joint[i, j] = (p[i] * kl).sum()
    return (joint + joint.T) / 2, entropy_form, passes


def started_context(backbone: Backbone, tokens: torch.Tensor, batch_size: int):
    """A probing context with its base pass run → ``(ctx, None)``; with fewer than two masked positions
    (no pair, so no probe) → ``(ctx, its all-zero certified result)``, which a labeller returns as is."""
    ctx = _Context(backbone, tokens, batch_size)
    if len(ctx.cols) < 2:
        zeros = ctx.logp.new_zeros(len(ctx.cols), len(ctx.cols))
        return ctx, ctx.result(ctx.probed, zeros, zeros, zeros, certified=True)
    ctx.run_marginals()
    return ctx, None


@torch.inference_mode()
def exact_mi(backbone: Backbone, tokens: torch.Tensor, batch_size: int = DEFAULT_BATCH_SIZE) -> ProbeResult:
    """Exact ground-truth MI by probing (the paper's equation, :func:`probing_equation`), batched:
    ``tokens (N,)`` → :class:`ProbeResult`.

    Runs ``1 + |M| V`` passes in chunks of ``batch_size`` and returns the entropy and joint forms,
    the symmetric label and the self-consistency diagnostics; ``bound`` is all zeros.
    """
    ctx = _Context(backbone, tokens, batch_size)
    ctx.run_marginals()
    lower, width, gap = ctx.measure(torch.ones_like(ctx.probed))
    return ctx.result(ctx.probed, lower, torch.zeros_like(width), gap, certified=False)


def _skip_widths(p: torch.Tensor):
    """Chain widths of skipping the s least probable values of each row, for s = 0..V.

    p ``(m, V)`` → ``order (m, V)`` (values by increasing probability), ``widths (m, V + 1)`` (made
    non-decreasing in s by a cummax against round-off).
    """
    ps, order = p.sort(-1)
    zero = ps.new_zeros(len(ps), 1)
    skipped = torch.cat([zero, (-torch.special.xlogy(ps, ps)).cumsum(-1)], -1)
    kept = torch.cat([ps.flip(-1).cumsum(-1).flip(-1), zero], -1)
    widths = (skipped - torch.special.xlogy(kept, kept)).clamp_min(0).cummax(-1).values
    return order, widths


def _max_skips(widths: torch.Tensor, budget: torch.Tensor) -> torch.Tensor:
    """Largest s per row with ``widths[:, s] <= budget``: ``(m, V + 1), (m,) → (m,)`` long."""
    return ((widths <= budget[:, None]).sum(-1) - 1).clamp_min(0)


def _keep_from_skips(order: torch.Tensor, skips: torch.Tensor) -> torch.Tensor:
    """``(m, V)`` bool: probe every value except each row's ``skips`` least probable ones."""
    ranks = torch.arange(order.shape[1], device=order.device).expand_as(order)
    return torch.zeros_like(order, dtype=torch.bool).scatter(1, order, ranks >= skips[:, None])


def _planned_skips(widths: torch.Tensor, pair_budget: float) -> torch.Tensor:
    """Skips whose chain widths satisfy ``A_i + A_j <= pair_budget`` for every pair of rows.

    Every row gets ``pair_budget / 2``; then the one row that gains most takes the pair's leftover
    ``pair_budget - max_{i != k} A_i``. widths ``(m, V + 1)``, m >= 2 → skips ``(m,)``.
    """
    skips = _max_skips(widths, widths.new_full((len(widths),), pair_budget / 2))
    used = widths.gather(1, skips[:, None]).squeeze(1)
    top = used.topk(2).values
    others = torch.full_like(used, float(top[0]))
    others[used.argmax()] = top[1]
    extra = _max_skips(widths, pair_budget - others)
    k = (extra - skips).argmax()
    skips[k] = extra[k]
    return skips


@torch.inference_mode()
def certified_mi(
    backbone: Backbone, tokens: torch.Tensor, tol: float = DEFAULT_TOL, batch_size: int = DEFAULT_BATCH_SIZE
) -> ProbeResult:
    """Ground-truth MI by probing with fewer passes: ``|label - exact label| <= bound <= tol``.

    tokens ``(N,)`` → :class:`ProbeResult`; ``joint`` holds interval midpoints, ``bound`` the proven
    error of ``label`` against :func:`exact_mi` given the same backbone outputs (it includes
    ``ROUND_OFF`` for float64; a backbone whose outputs change with the batch composition, as GPU
    kernels may, adds that jitter on top).

    Proof. Fix ``i != j`` in M, write ``X = X_i``, ``Y = X_j`` under ``P(v, w) = p_i(v) c_iv,j(w)``,
    whose mutual information is exactly ``I_joint[i, j]``. Let K be the probed values, S the rest,
    ``eps = p_i(S)``, ``Z = 1[X in S]``. Z is a function of X, so by the chain rule
    ``I(X;Y) = I(Z;Y) + (1-eps) I(X;Y|Z=0) + eps I(X;Y|Z=1)``. The middle term
    ``L = sum_{v in K} p_i(v) KL(c_iv,j || q0)``, ``q0 = sum_K p_i(v) c_iv,j / (1-eps)``, uses probed
    values only. The other two lie in ``[0, H(Z) + eps H(X|Z=1)]``, and
    ``A = h(eps) + eps H(X|Z=1) = -sum_S p_i log p_i - (1-eps) log(1-eps)`` needs only p_i
    (``A <= h(eps) + eps log|S|``; ``A = H(p_i)`` for an unprobed row). Independently,
    ``I = H(Y) - H(Y|X)`` with ``H(Y|X) >= sum_K p_i(v) H(c_iv,j)`` and the Y-marginal equal to
    ``(1-eps) q0 + r`` for an unknown ``r >= 0`` of mass eps, so ``H(Y) <= W``, its water-filled
    maximum; as ``L = (1-eps) H(q0) - sum_K p_i(v) H(c_iv,j)``, ``I - L <= B = W - (1-eps) H(q0)``.
    Hence ``I_joint[i, j]`` lies in ``[L, L + min(A, B)]`` and its midpoint errs by at most
    ``r_ij = min(A, B) / 2`` (an unprobed row reports ``H(p_i) / 2``, the midpoint of
    ``[0, H(p_i)]``); the label averages the two directions, so it errs by at most
    ``(r_ij + r_ji) / 2``. Planning: A grows with S (grouping property of entropy) and is known
    before any probe, so each row skips its least probable values while ``A_i <= 2 tol'``
    (``tol' = tol - 2 ROUND_OFF``; an unprobed row needs ``H(p_i) <= 2 tol'``), and the row that
    gains most may take the pair's leftover ``4 tol' - max_{i != k} A_i``; then every pair has
    ``(A_i + A_j) / 4 + ROUND_OFF <= tol``, whatever the probes return. B only tightens the
    reported bound. With ``|M| < 2`` there is no pair and no pass.
    """
    if tol <= MIN_TOL:
        raise ValueError(f"tol must exceed {MIN_TOL:g}, got {tol:g}")
    ctx, empty = started_context(backbone, tokens, batch_size)
    if empty is not None:
        return empty
    order, widths = _skip_widths(ctx.logp.exp())
    keep = _keep_from_skips(order, _planned_skips(widths, pair_budget=4 * (tol - 2 * ROUND_OFF)))
    lower, width, gap = ctx.measure(keep)
    return ctx.result(keep, lower, width, gap, certified=True)


def content_width(backbone: Backbone, tokens: torch.Tensor) -> int:
    """``tokens (N,)`` without its trailing pads: the length of the prefix that holds every non-pad
    token (``N`` for a backbone without a ``pad_id``, such as the Sudoku MDM). A padded protein
    context (the family's contexts are padded to the longest sequence, ~27% pads) probed on this
    prefix costs that much less, and its logits are the same: ESM-C attends only to non-pad tokens."""
    pad = getattr(backbone, "pad_id", None)
    if pad is None:
        return len(tokens)
    real = (tokens != pad).nonzero()
    return int(real[-1]) + 1 if len(real) else 0


def padded_result(result: ProbeResult, n: int) -> ProbeResult:
    """``result`` of a context's first ``w`` tokens as the result of all ``n``: the ``(w, w)``
    matrices, ``(w,)`` masks and ``(w, V)`` probe flags zero-padded (pads are never masked, so
    their MI, bound and probes are 0); the scalars unchanged."""
    w = len(result.masked)
    if w == n:
        return result
    grow = n - w
    sq = {k: F.pad(getattr(result, k), (0, grow, 0, grow))
          for k in ("label", "joint", "entropy_form", "bound", "tv", "tv_bound")}
    return dataclasses.replace(result, **sq, masked=F.pad(result.masked, (0, grow)),
                               probed=F.pad(result.probed, (0, 0, 0, grow)))


def mask_contexts(
    solutions: torch.Tensor,
    mask_id: int,
    generator: torch.Generator,
    fixed: torch.Tensor | None = None,
    vocab_ids: torch.Tensor | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Mask each cell with probability t, ``t ~ U[0, 1]`` per context (the paper's context draw).

    solutions ``(C, N)`` long; fixed ``(C, N)`` bool cells never masked (e.g. clues); with
    ``vocab_ids`` (a backbone's ``vocab_token_ids``) every token outside them is fixed too, so BOS,
    EOS, pads and other special tokens stay unmasked. Random numbers come from ``generator`` on its
    own device. Returns ``contexts (C, N)`` long and ``t (C,)``.
    """
    if vocab_ids is not None:
        special = ~torch.isin(solutions, torch.as_tensor(vocab_ids).to(solutions.device))
        fixed = special if fixed is None else fixed.to(solutions.device) | special
    n_ctx, n = solutions.shape
    t = torch.rand(n_ctx, generator=generator, device=generator.device)
    draw = torch.rand(n_ctx, n, generator=generator, device=generator.device)
    mask = (draw < t[:, None]).to(solutions.device)
    if fixed is not None:
        mask &= ~fixed.to(solutions.device)
    return solutions.masked_fill(mask, mask_id), t.to(solutions.device)
