"""MI-guided parallel unmasking (paper Algorithm 1) and its oracle variant.

At each pass the masked positions are walked in order of increasing entropy. The first is always
unmasked; each later candidate ``i`` costs its own entropy plus ``λ`` times its estimated dependence
on the positions already admitted this pass,

    cost_i = h_i + λ Σ_{j ∈ U} Î_ij,

and is admitted while the budget ``γ`` lasts. Strongly dependent positions are therefore not unmasked
together, while independent low-entropy ones are. ``Î`` comes from the learned MI head on the same
forward pass (:func:`head_pairwise_fn`, no extra pass), or, for :class:`OracleMI`, from exact probing
(:func:`oracle_pairwise_fn`, ``1 + |M| V`` extra passes per sequence per step: an upper bound on what
a perfect head could give, not a practical sampler).

    from mdm_mi.core.samplers import decode
    from mdm_mi.mi.guided import MIGuided, head_pairwise_fn
    sampler = MIGuided(gamma=1.0, lam=1.0, on_reject="skip", charge_first=True)
    result = decode(model, puzzles, sampler, pairwise_fn=head_pairwise_fn(head))

:func:`algorithm1` is the rule as the paper writes it, one sequence as plain Python; :func:`admit` is
the batched walk that :class:`MIGuided` runs, tested against it (``tests/test_guided.py``).
"""

from __future__ import annotations

from typing import Sequence

import torch

from mdm_mi.core.backbone import Backbone, BackboneOutput, probe_backbone
from mdm_mi.core.sampler_spec import HEAD, ORACLE, Flag, SamplerSpec, Setting, Style, gamma_calibration
from mdm_mi.core.samplers import PairwiseFn, Sampler, StepView
from mdm_mi.mi import probe
from mdm_mi.mi.labeller import probe_context

ON_REJECT = ("skip", "stop")  # a rejected candidate: walk on to the next one, or end the pass
ORACLE_METHODS = ("exact", "certified")


def algorithm1(
    entropy: Sequence[float],
    masked: Sequence[bool],
    mi: Sequence[Sequence[float]],
    gamma: float,
    lam: float,
    on_reject: str = "skip",
    charge_first: bool = False,
) -> list[int]:
    """The paper's Algorithm 1 (MI-guided unmasking) for one sequence at one pass, as plain Python.

    entropy ``(N,)`` nats ``h_i`` of each position's marginal, masked ``(N,)``, mi ``(N, N)`` the
    pairwise estimate ``Î_ij ≥ 0``; gamma the budget γ, lam the weight λ. Returns the sorted positions
    U to unmask now: walk the masked positions by increasing entropy (ties by position); the first is
    always admitted (every pass unmasks at least one); each later ``i`` is admitted when

        h_i + λ Σ_{j∈U} Î_ij ≤ γ − (the cost of those admitted before it),

    the rest wait for a later pass. ``on_reject="stop"`` ends the walk at the first rejection;
    ``charge_first`` charges the first position's entropy to γ. The defaults are the workflow's
    (``mi_on_reject: skip``, ``mi_charge_first: false``). :func:`admit` is the batched version.
    """
    walk = sorted((entropy[i], i) for i in range(len(entropy)) if masked[i])
    admitted: list[int] = []
    budget = gamma
    for h_i, i in walk:
        cost = h_i + lam * sum(mi[i][j] for j in admitted)
        if not admitted:
            admitted.append(i)
            budget -= h_i if charge_first else 0.0
        elif cost <= budget:
            admitted.append(i)
            budget -= cost
        elif on_reject == "stop":
            break
    return sorted(admitted)

MI_FLAGS = ("gamma", "lam", "on_reject", "charge_first")  # Algorithm 1's constructor arguments
MI_SHARED = (Setting("on_reject", "mi_on_reject"), Setting("charge_first", "mi_charge_first"))  # one config value each


class MIGuided(Sampler):
    """Algorithm 1: entropy-ordered walk admitting candidates whose MI-penalised cost fits the budget.

    gamma:        budget γ ≥ 0 in nats.
    lam:          weight λ ≥ 0 of the dependence penalty ``Σ_{j∈U} Î_ij``.
    on_reject:    ``"skip"`` (a rejected candidate is passed over, later ones may still fit) or
                  ``"stop"`` (the first rejection ends the pass; with λ = 0 this is the longest
                  entropy-sorted prefix whose charged entropies sum to ≤ γ).
    charge_first: whether the always-admitted first position's entropy is charged to the budget.
    """

    name = "mi"
    uses_pairwise = True
    spec = SamplerSpec(
        MI_FLAGS, HEAD, style=Style("MI-guided (ours)", "tab:green"),
        own_flags={"lam": Flag("float", "weight λ of the pairwise MI", 1.0),
                   "on_reject": Flag("str", "skip | stop at a rejected candidate", schema="sudoku.samplers.mi_on_reject"),
                   "charge_first": Flag("bool", "charge the first token's entropy to γ", schema="sudoku.samplers.mi_charge_first")},
        grid=(Setting("gamma", "mi_gamma", "g"), Setting("lam", "mi_lambda", "l")), shared=MI_SHARED,
        calibration=gamma_calibration(each=Setting("lam", "mi_lambda", "l", "λ", "MI-guided λ values, each calibrated"),
                                      against=("eb", "naive", "threshold", "sequential")))

    def __init__(self, gamma: float, lam: float, on_reject: str, charge_first: bool):
        if not gamma >= 0:
            raise ValueError(f"{self.name} gamma must be >= 0, got {gamma}")
        if not lam >= 0:
            raise ValueError(f"{self.name} lam must be >= 0, got {lam}")
        if on_reject not in ON_REJECT:
            raise ValueError(f"{self.name} on_reject must be one of {ON_REJECT}, got {on_reject!r}")
        if not isinstance(charge_first, bool):
            raise ValueError(f"{self.name} charge_first must be a bool, got {charge_first!r}")
        self.gamma, self.lam = float(gamma), float(lam)
        self.on_reject, self.charge_first = on_reject, charge_first

    def select(self, view: StepView) -> torch.Tensor:
        """``view.pairwise (B, N, N)`` required → ``(B, N)`` bool admitted set U ⊆ ``view.masked``."""
        if view.pairwise is None:
            raise ValueError(f"sampler {self.name!r} needs view.pairwise (B, N, N)")
        return admit(
            view.entropy, view.masked, view.pairwise, self.gamma, self.lam,
            stop_on_reject=self.on_reject == "stop", charge_first=self.charge_first,
        )

    def params(self) -> dict:
        return {"gamma": self.gamma, "lam": self.lam, "on_reject": self.on_reject,
                "charge_first": self.charge_first}


class OracleMI(MIGuided):
    """Algorithm 1 fed the probing MI itself as its pairwise matrix (:func:`oracle_pairwise_fn`:
    exact, or certified within a tolerance).

    The rule is identical to :class:`MIGuided`; only the caller's ``pairwise_fn`` differs. It bounds
    what a perfect MI head could achieve. Its probing passes are not counted by ``decode``.
    """

    name = "mi-oracle"
    spec = SamplerSpec(MI_FLAGS, ORACLE, user=False, style=Style("MI-guided, exact MI", "tab:purple"), settings_of="mi")


def pairs_of(pairwise) -> "DensePairs":
    """A pass's pairwise matrix as a row source: a ``(B, N, N)`` tensor seen through :class:`DensePairs`,
    or an object that already has ``among`` (:class:`HeadPairs`) as it is."""
    return pairwise if hasattr(pairwise, "among") else DensePairs(pairwise)


class DensePairs:
    """A dense ``(B, N, N)`` pairwise matrix seen through ``among(idx (B, k)) → (B, k, k)``."""

    def __init__(self, matrix: torch.Tensor):
        self.matrix, self.shape = matrix, tuple(matrix.shape)

    def among(self, idx: torch.Tensor) -> torch.Tensor:
        rows = torch.arange(len(idx), device=idx.device)[:, None, None]
        return self.matrix[rows, idx[:, :, None], idx[:, None, :]]


class HeadPairs:
    """The MI head's Î, formed only among the positions the walk visits (:meth:`MIHead.among`):
    ``among(idx)`` equals ``head(hidden, masked)`` restricted to ``idx``, up to float round-off in
    the matmul's summation order, at a cost that falls with ``k`` instead of ``(B, N, N)``."""

    def __init__(self, head: torch.nn.Module, hidden: torch.Tensor, masked: torch.Tensor):
        self.head, self.hidden, self.masked = head, hidden, masked
        self.shape = (*masked.shape, masked.shape[1])

    def among(self, idx: torch.Tensor) -> torch.Tensor:
        return self.head.among(self.hidden, self.masked, idx)


def admit(
    entropy: torch.Tensor,
    masked: torch.Tensor,
    pairwise: "torch.Tensor | DensePairs | HeadPairs",
    gamma: float,
    lam: float,
    *,
    stop_on_reject: bool,
    charge_first: bool,
) -> torch.Tensor:
    """The paper's Algorithm 1 (:func:`algorithm1`, one sequence) vectorised over the batch: ≤ N
    steps of ``(B,)`` ops.

    entropy ``(B, N)`` nats (any value off ``masked``), masked ``(B, N)`` bool, pairwise ``(B, N, N)``
    Î ≥ 0 (a tensor, or an object whose ``among(idx (B, k))`` gives Î among the positions the walk
    visits, ``(B, k, k)``, like :class:`HeadPairs`). Returns ``(B, N)`` bool U: the lowest-entropy
    masked position of every row with a mask, plus each later candidate i (by increasing entropy,
    stable) with ``h_i + λ Σ_{j∈U} Î_ij ≤`` the budget left, which then shrinks by that cost. As Î ≥ 0,
    a candidate with ``h_i > γ`` can never fit, so the walk ends before the first of them; Î is asked
    for only among the ``k ≤ N`` candidates it visits (:func:`walk_length`), and :func:`walk` runs
    the budget in float64, summing each coupling in walk order as :func:`algorithm1` does.
    """
    source = pairs_of(pairwise)
    assert entropy.shape == masked.shape and tuple(source.shape) == (*masked.shape, masked.shape[1]), (
        entropy.shape, masked.shape, source.shape,
    )
    h = entropy.masked_fill(~masked, float("inf"))  # float32 → float64 is exact and monotone: same order
    order = h.argsort(dim=1, stable=True)  # masked positions first
    steps = walk_length(h, masked, gamma)
    if steps == 0:  # no row has a mask
        return torch.zeros_like(masked)
    idx = order[:, :steps]  # the walk's candidates, in walk order
    sub = source.among(idx) if steps > 1 else None  # Î among them, (B, k, k)
    took = walk(h.gather(1, idx).double(), sub, gamma, lam, stop_on_reject, charge_first)
    return torch.zeros_like(masked).scatter_(1, idx, took)


def walk_length(h: torch.Tensor, masked: torch.Tensor, gamma: float) -> int:
    """Steps the batched walk needs: the most candidates with ``h_i ≤ γ`` in any row (at least the
    first, at most the row's masked positions; 0 for an empty batch). ``h (B, N)``, +inf off ``masked``."""
    if not len(h):
        return 0
    fit = (h.double() <= gamma).sum(1).clamp_min(1).minimum(masked.sum(1))
    return int(fit.max())


def walk(
    h: torch.Tensor, sub: torch.Tensor | None, gamma: float, lam: float, stop_on_reject: bool, charge_first: bool
) -> torch.Tensor:
    """Algorithm 1's admissions over candidates already in walk order → ``(B, k)`` bool.

    h ``(B, k)`` float64 entropies in walk order (+inf where a row has run out of masked positions),
    sub ``(B, k, k)`` Î among them (None when k ≤ 1). ``acc[:, i]`` keeps ``Σ_{j∈U} Î_ij`` as U grows:
    each admitted candidate adds its column once, so a step is a few ``(B,)`` ops instead of a sum over
    all earlier candidates. A row's +inf cost is never admitted, and under ``stop_on_reject`` its
    rejection ends a walk that has nothing left to visit.
    """
    b, k = h.shape
    took = torch.zeros(b, k, dtype=torch.bool, device=h.device)
    took[:, 0] = torch.isfinite(h[:, 0])  # the first candidate of every row with a mask: always admitted
    left = torch.full((b,), float(gamma), dtype=torch.float64, device=h.device)
    if charge_first:
        left = torch.where(took[:, 0], left - h[:, 0], left)
    if k == 1:
        return took
    columns = sub.transpose(1, 2).to(torch.float64, memory_format=torch.contiguous_format)  # [:, j, i] = Î_ij
    acc = columns[:, 0] * took[:, :1]  # (B, k): Σ_{j∈U} Î_ij over the candidates admitted so far
    walking = took[:, 0].clone()
    for r in range(1, k):
        cost = h[:, r] + lam * acc[:, r]
        ok = cost <= left
        if stop_on_reject:
            ok &= walking
            walking = ok
        took[:, r] = ok
        left = torch.where(ok, left - cost, left)
        if r + 1 < k:
            acc[:, r + 1 :] += columns[:, r, r + 1 :] * ok[:, None]
    return took


def head_pairwise_fn(head: torch.nn.Module) -> PairwiseFn:
    """``fn(output, masked, tokens=None) →`` :class:`HeadPairs` of ``head(output.hidden, masked)``:
    Î from the same forward pass, no extra backbone call (tokens unused), formed only among the
    positions the admission walk visits. Puts the head in eval mode; it must be on the backbone's
    device."""
    head.eval()

    @torch.inference_mode()
    def fn(output: BackboneOutput, masked: torch.Tensor, tokens: torch.Tensor | None = None) -> HeadPairs:
        return HeadPairs(head, output.hidden, masked)

    return fn


def oracle_pairwise_fn(
    backbone: Backbone, method: str = "exact", tol: float | None = None, batch_size: int | None = None,
    memo: dict[bytes, torch.Tensor] | None = None,
) -> PairwiseFn:
    """``fn(output, masked, tokens (B, N)) → (B, N, N)`` float32: the probing label of each sequence's
    current tokens (:func:`mdm_mi.mi.probe.exact_mi`, or ``certified_mi`` within ``tol``).

    ``decode`` passes the tokens of the pass; the probing passes (``1 + |M| V`` per sequence for
    ``exact``) are extra and not counted by decode. With ``memo`` (:func:`memo_key` of a row's tokens →
    its float32 label, this backbone's at this method and tolerance), a row already probed, by this
    fn or by the caller, is not probed again: the fills of one template share their first pass.
    """
    backbone = probe_backbone(backbone)  # a bf16-decoding wrapper's fp32 model: the probes stay fp32
    if method not in ORACLE_METHODS:
        raise ValueError(f"oracle method must be one of {ORACLE_METHODS}, got {method!r}")
    batch = probe.DEFAULT_BATCH_SIZE if batch_size is None else batch_size
    tol = probe.DEFAULT_TOL if tol is None else tol

    def label(tokens: torch.Tensor) -> torch.Tensor:  # a row padded to its batch: probed without the pads
        if memo is None:
            return probe_context(backbone, tokens, method, tol, batch).label.float()
        key = memo_key(tokens)
        if key not in memo:
            memo[key] = probe_context(backbone, tokens, method, tol, batch).label.float()
        return memo[key]

    @torch.inference_mode()
    def fn(output: BackboneOutput, masked: torch.Tensor, tokens: torch.Tensor | None = None) -> torch.Tensor:
        if tokens is None:
            raise ValueError("the oracle pairwise fn needs the current tokens (B, N)")
        assert tokens.shape == masked.shape, (tokens.shape, masked.shape)
        if not torch.equal(tokens == backbone.mask_id, masked):
            raise ValueError("masked does not match tokens == backbone.mask_id")
        if len(tokens) == 0:
            return torch.zeros(0, masked.shape[1], masked.shape[1], device=masked.device)
        return torch.stack([label(row) for row in tokens])

    return fn


def memo_key(tokens: torch.Tensor) -> bytes:
    """One row's tokens ``(N,)`` as the key of :func:`oracle_pairwise_fn`'s ``memo``."""
    return tokens.detach().cpu().to(torch.int64).numpy().tobytes()
