"""One Sampler interface and the baseline unmasking policies.

Every sampler is a policy: at each forward pass it sees a :class:`StepView` of the masked positions
(entropies, confidence margins and, when it asks for one, an ``(B, N, N)`` pairwise matrix computed
from the *same* pass) and returns which masked positions to unmask now. :func:`decode` owns the loop,
the token choice and the pass counting, so every sampler counts forward passes identically: a
sequence is charged one pass for each backbone call it takes part in, and leaves the batch as soon as
it has no mask left.

    from mdm_mi.core.samplers import EntropyBounded, decode
    result = decode(model, puzzles, EntropyBounded(gamma=0.2), torch.Generator().manual_seed(0))

Each listed sampler (:data:`mdm_mi.sampling.registry.SAMPLER_LIST`) says what it is beside its class, in
its ``spec`` (:class:`mdm_mi.core.sampler_spec.SamplerSpec`): its flags, the matrix it reads, its plot
style, the workflow's grid of it and what the comparisons calibrate. ``python -m mdm_mi.sampling.codegen``
copies the specs into the torch-free table :data:`mdm_mi.core.sampler_table.SAMPLERS`, through which
samplers are chosen by name.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Callable, ClassVar, Sequence

import json
import math

import torch

from mdm_mi.core.backbone import Backbone, BackboneOutput, check_backbone, check_frame, check_output
from mdm_mi.core.forward_cache import ForwardCache
from mdm_mi.core.remask import Check, forward_with_checks, progress_violations
from mdm_mi.core.sampler_spec import ATTENTION, QUALITY, TOKENS, Calibration, Flag, SamplerSpec, Setting, Style, gamma_calibration, tau_calibration
from mdm_mi.core.streams import RowStreams
from mdm_mi.core.view import INF, History, StepView
from mdm_mi.infra.flags import Decoding

EPS_K = 1e-9  # round-off guard of the fractional-k schedule (k·s is exact for integer k)
GREEDY = Decoding()  # temperature 0: each chosen position takes its most likely token


class Sampler(ABC):
    """A policy choosing, at each pass, a non-empty subset of the masked positions to unmask. ``name``
    is its key in the sampler table, ``spec`` what the table says of it (required of every class in
    :data:`mdm_mi.sampling.registry.SAMPLER_LIST`); ``uses_pairwise``: ``decode`` hands it a pairwise
    matrix (its spec names where the matrix comes from)."""

    name: ClassVar[str]
    spec: ClassVar[SamplerSpec | None] = None
    uses_pairwise: ClassVar[bool] = False
    remasks: ClassVar[bool] = False  # decode checks its pending tokens and lets it send some back (core/remask.py)
    needs_history: ClassVar[bool] = False  # decode hands it view.drift, the marginals' change since the last pass

    @abstractmethod
    def select(self, view: StepView) -> torch.Tensor:
        """Return ``(B, N)`` bool ⊆ ``view.masked``, with ≥ 1 position in every row that has a mask."""

    def suspects(self, view: StepView, drafted: torch.Tensor) -> torch.Tensor:
        """A remasking sampler: which of this pass's ``drafted (B, N)`` tokens decode checks at the next
        pass (``(B, N)`` bool ⊆ ``drafted``); all of them unless a rule says otherwise."""
        return drafted

    def remask(self, check: Check) -> torch.Tensor:
        """A remasking sampler: ``(B, N)`` bool ⊆ ``check.pending``, the tokens that go back to the mask,
        fewer in each row than ``check.drafted`` holds (:func:`mdm_mi.core.remask.cap_remask`)."""
        return torch.zeros_like(check.pending)

    def params(self) -> dict:
        """The settings that identify this sampler in result tables."""
        return {}

    def stream_tag(self) -> str:
        """The sampler and its setting as one string: the part of a fill's random-stream key that
        names the rule (:func:`mdm_mi.core.streams.row_keys`)."""
        return f"{self.name} {json.dumps(self.params(), sort_keys=True, default=str)}"


def _lowest_entropy_first(view: StepView, k: torch.Tensor | int) -> torch.Tensor:
    """Select the ``k`` masked positions of lowest entropy per row (fewer if fewer are masked)."""
    order = view.entropy.argsort(dim=1, stable=True)
    rank = torch.empty_like(order)
    rank.scatter_(1, order, torch.arange(order.shape[1], device=order.device).expand_as(order))
    k = torch.as_tensor(k, device=order.device).reshape(-1, 1)
    return (rank < k) & view.masked


class Sequential(Sampler):
    """One token per pass: the lowest-entropy masked position, or the largest top-1/top-2 margin
    (Kim et al. 2025, "Train for the worst, plan for the best") with ``order="margin"``."""

    name = "sequential"
    spec = SamplerSpec(("order",), own_flags={"order": Flag("str", "entropy | margin", "entropy")},
                       style=Style("sequential", "black"), grid=(Setting("order", "sequential"),))

    def __init__(self, order: str = "entropy"):
        if order not in ("entropy", "margin"):
            raise ValueError(f"sequential order must be 'entropy' or 'margin', got {order!r}")
        self.order = order

    def select(self, view: StepView) -> torch.Tensor:
        if self.order == "entropy":
            return _lowest_entropy_first(view, 1)
        best = view.margin.argmax(dim=1, keepdim=True)
        return torch.zeros_like(view.masked).scatter_(1, best, True) & view.masked

    def params(self) -> dict:
        return {"order": self.order}


class NaiveTopK(Sampler):
    """Naive parallel decoding: the ``k`` lowest-entropy masked positions per pass.

    ``k`` may be fractional (k ≥ 1), so that its passes can be calibrated to any budget: pass ``s``
    unmasks ``⌊k(s+1)⌋ − ⌊ks⌋`` positions, i.e. ``⌊k⌋`` or ``⌈k⌉`` and ``k`` on average; an integer
    ``k`` unmasks exactly ``k`` every pass.
    """

    name = "naive"
    spec = SamplerSpec(("k",), own_flags={"k": Flag("float | None", "tokens per pass (fractional: ⌊k⌋ or ⌈k⌉, k on average)",
                                                     calibrated=True)},
                       style=Style("naive top-k", "tab:orange"), grid=(Setting("k", "naive_k", "k"),),
                       calibration=Calibration("k", "k", 1.0, TOKENS, "log", increasing=False))

    def __init__(self, k: float):
        if not k >= 1:
            raise ValueError(f"naive k must be >= 1, got {k}")
        self.k = int(k) if float(k).is_integer() else float(k)

    def per_pass(self, step: int) -> int:
        """Positions unmasked at pass ``step`` (0-based)."""
        return math.floor(self.k * (step + 1) + EPS_K) - math.floor(self.k * step + EPS_K)

    def select(self, view: StepView) -> torch.Tensor:
        return _lowest_entropy_first(view, self.per_pass(view.step))

    def params(self) -> dict:
        return {"k": self.k}


def eb_prefix(entropy: Sequence[float], masked: Sequence[bool], gamma: float) -> list[int]:
    """EB-Sampler's rule (Ben-Hamu et al. 2025, arXiv 2505.24857) for one sequence at one pass, as
    plain Python: entropy ``(N,)`` nats, masked ``(N,)`` → the sorted positions U to unmask, the
    largest prefix of the masked positions sorted by increasing entropy (ties by position) with

        Σ_{i∈U} H_i − max_{i∈U} H_i ≤ γ

    (the max of a sorted prefix is its last entry); the first position always qualifies.
    :class:`EntropyBounded` is the batched version."""
    walk = sorted((entropy[i], i) for i in range(len(entropy)) if masked[i])
    admitted: list[int] = []
    total = 0.0
    for h_i, i in walk:
        total += h_i
        if total - h_i > gamma:
            break
        admitted.append(i)
    return sorted(admitted)


class EntropyBounded(Sampler):
    """EB-Sampler (Ben-Hamu et al. 2025, arXiv 2505.24857), batched: :func:`eb_prefix` per row.

    Sort masked positions by entropy ascending and unmask the largest prefix U with
    ``Σ_{i∈U} H_i − max_{i∈U} H_i ≤ γ``; the single lowest-entropy position always qualifies.
    """

    name = "eb"
    spec = SamplerSpec(("gamma",), own_flags={"gamma": Flag("float | None", "entropy budget γ (nats)", calibrated=True)},
                       style=Style("EB-Sampler", "tab:blue"), grid=(Setting("gamma", "eb_gamma", "g"),),
                       calibration=gamma_calibration())

    def __init__(self, gamma: float):
        if gamma < 0:
            raise ValueError(f"eb gamma must be >= 0, got {gamma}")
        self.gamma = float(gamma)

    def select(self, view: StepView) -> torch.Tensor:
        sorted_h = view.entropy.sort(dim=1).values  # masked first, +inf after
        finite = torch.isfinite(sorted_h)
        csum = torch.where(finite, sorted_h, 0.0).cumsum(1)
        ok = (csum - torch.where(finite, sorted_h, 0.0) <= self.gamma) & finite
        # the prefix length is the first failure; ok is monotone because H is sorted ascending
        k = ok.long().cumprod(1).sum(1).clamp(min=1)
        return _lowest_entropy_first(view, k)

    def params(self) -> dict:
        return {"gamma": self.gamma}


class ConfidenceThreshold(Sampler):
    """Confidence-threshold parallel decoding (Fast-dLLM, Wu et al. 2025, arXiv 2505.22618).

    Unmask every masked position whose top-1 probability exceeds ``tau``; when none does, the single
    most confident one, so each pass unmasks at least one. Passes rise with ``tau``; ``tau`` ≥ 1
    is sequential decoding by confidence.
    """

    name = "threshold"
    spec = SamplerSpec(("tau",), own_flags={"tau": Flag("float | None", "unmask every token whose top probability exceeds τ",
                                                         calibrated=True)},
                       style=Style("threshold", "tab:red"), calibration=tau_calibration())

    def __init__(self, tau: float):
        if not 0 <= tau <= 1:
            raise ValueError(f"{self.name} tau must lie in [0, 1], got {tau}")
        self.tau = float(tau)

    def select(self, view: StepView) -> torch.Tensor:
        conf = view.confidence
        if conf is None:
            raise ValueError(f"sampler {self.name!r} needs view.confidence (B, N)")
        best = conf.argmax(dim=1, keepdim=True)
        return ((conf > self.tau) | torch.zeros_like(view.masked).scatter_(1, best, True)) & view.masked

    def params(self) -> dict:
        return {"tau": self.tau}


@dataclass(frozen=True)
class DecodeResult:
    """tokens: ``(B, N)`` fully unmasked; passes: ``(B,)`` forward passes each sequence took."""

    tokens: torch.Tensor
    passes: torch.Tensor


PairwiseFn = Callable[[BackboneOutput, torch.Tensor, torch.Tensor], torch.Tensor]


def choose_tokens(logits: torch.Tensor, temperature: float, generator: torch.Generator | RowStreams | None,
                  step: int = 0) -> torch.Tensor:
    """``(B, N, V)`` → ``(B, N)`` vocabulary indices: argmax if temperature is 0, else a sample
    from softmax(logits / temperature) by the Gumbel-max trick. The uniforms come from ``generator``:
    a ``torch.Generator`` shared by the batch, or :class:`RowStreams` (one keyed stream per row, drawn
    at pass ``step``: a row's tokens then depend on its own key only)."""
    if temperature == 0:
        return logits.argmax(-1)
    if isinstance(generator, RowStreams):
        assert len(generator) == logits.shape[0], (len(generator), logits.shape)
        u = generator.uniform(step, logits.shape[1:], logits.device)
    else:
        gen_device = generator.device if generator is not None else torch.device("cpu")
        u = torch.rand(logits.shape, generator=generator, device=gen_device).to(logits.device)
    exponential = -torch.log(u.clamp_min(1e-20))
    gumbel = -torch.log(exponential.clamp_min(1e-20))
    return (logits.float() / temperature + gumbel).argmax(-1)


def step_view(sampler: Sampler, out: BackboneOutput, masked: torch.Tensor, tokens: torch.Tensor,
              pairwise_fn: PairwiseFn | None, step: int, drift: torch.Tensor | None = None) -> StepView:
    """The view of one pass (``decode``'s, and the testbed's replays'): the logits' statistics and the
    side signal the sampler reads from the same pass, ``pairwise_fn(out, masked, tokens)``: a pairwise
    matrix, or for a sampler reading the :data:`~mdm_mi.core.sampler_spec.QUALITY` head ``(B, N)``
    per-token quality, handed over as ``view.quality``."""
    side = pairwise_fn(out, masked, tokens) if sampler.uses_pairwise else None
    reads_quality = sampler.spec is not None and sampler.spec.pairwise == QUALITY
    pairwise, quality = (None, side) if reads_quality else (side, None)
    return StepView.from_logits(out.logits, masked, pairwise, step, drift, quality)


@torch.inference_mode()
def decode(
    backbone: Backbone,
    tokens: torch.Tensor,
    sampler: Sampler,
    generator: torch.Generator | RowStreams | None = None,
    *,
    decoding: Decoding = GREEDY,
    pairwise_fn: PairwiseFn | None = None,
    max_passes: int | None = None,
    cache: ForwardCache | None = None,
) -> DecodeResult:
    """Unmask every ``backbone.mask_id`` in ``tokens`` ``(B, N)`` with ``sampler``.

    ``generator``: a ``torch.Generator`` shared by the batch, or :class:`RowStreams` with one key per
    row of ``tokens`` (each row's draws then depend on its key alone, whatever the batch holds).
    ``decoding``: the verb's decoding settings in one object (:class:`mdm_mi.infra.flags.Decoding`; its
    ``temperature`` picks the tokens, :func:`choose_tokens`). Non-mask positions are never written.
    ``pairwise_fn(output, masked, tokens)`` → ``(B, N, N)`` is
    called on the same forward pass's output (and the tokens it saw) when the sampler uses a pairwise
    matrix: the MI head adds no backbone pass (the exact-MI oracle does, and is not counted). For a
    sampler whose spec reads the :data:`~mdm_mi.core.sampler_spec.QUALITY` head it returns ``(B, N)``
    per-token quality instead, handed over as ``view.quality``.
    ``cache``: rows of earlier passes (this decode's or another's) handed back instead of computed
    (:class:`mdm_mi.core.forward_cache.ForwardCache`); the passes are counted as without it. Ignored
    for a sampler that reads the backbone's attention (its hooks capture it during the call).

    A remasking sampler (``remasks``) may send tokens this call drew back to the mask
    (:mod:`mdm_mi.core.remask`): its pending tokens are checked by leave-one-out rows in the pass's own
    backbone call (no extra pass), and a pass must leave fewer masks than it found, so a decode still
    ends within N passes. A sampler with ``needs_history`` sees ``view.drift``, how each masked
    marginal moved since the row's previous pass.
    """
    assert tokens.ndim == 2, tokens.shape
    if sampler.uses_pairwise and pairwise_fn is None:
        raise ValueError(f"sampler {sampler.name!r} needs a pairwise matrix (an MI head); none given")
    check_backbone(backbone)  # values are written as vocab_token_ids: never the mask or a special token
    check_frame(backbone, tokens)
    if cache is not None and sampler.spec is not None and sampler.spec.pairwise == ATTENTION:
        cache = None
    if sampler.remasks and sampler.spec is not None and sampler.spec.pairwise == ATTENTION:
        raise ValueError(f"sampler {sampler.name!r} remasks and reads the attention: its check rows would join the capture")
    tokens = tokens.clone()
    passes = torch.zeros(tokens.shape[0], dtype=torch.long, device=tokens.device)
    pending = torch.zeros_like(tokens, dtype=torch.bool)  # tokens this decode drew and checks at the next pass
    free = tokens == backbone.mask_id  # the positions this decode writes: a written token is one of them unmasked
    prior = torch.zeros(tokens.shape, dtype=torch.float64, device=tokens.device)  # log p of each token when drawn
    history = History(len(tokens))  # each row's previous logits, for a sampler that reads the drift
    vocab_ids = backbone.vocab_token_ids.to(tokens.device)
    limit = max_passes if max_passes is not None else tokens.shape[1] + 1
    for step in range(limit):
        masked_all = tokens == backbone.mask_id
        active = masked_all.any(1).nonzero().squeeze(1)
        if active.numel() == 0:
            break
        sub, masked = tokens[active], masked_all[active]
        out, logp = forward_with_checks(backbone, sub, pending[active], cache, sampler.uses_pairwise)
        if step == 0 and cache is None:
            check_output(backbone, out, sub)
        passes[active] += 1
        moved = history.drift(out.logits, active, masked) if sampler.needs_history else None
        view = step_view(sampler, out, masked, sub, pairwise_fn, step, moved)
        chosen = sampler.select(view) & masked
        if not chosen.any(1).all():
            raise RuntimeError(f"sampler {sampler.name!r} chose no position for a sequence with masks")
        streams = generator.rows(active) if isinstance(generator, RowStreams) else generator
        picked = choose_tokens(out.logits, decoding.temperature, streams, step)
        drawn = torch.where(chosen, vocab_ids[picked], sub)
        if sampler.remasks:
            nan = torch.full(sub.shape, float("nan"), dtype=torch.float64, device=sub.device)
            pend, mine = pending[active], free[active] & ~masked  # mine: the tokens this decode wrote and holds
            check = Check(pend, nan if logp is None else logp, prior[active].where(pend, nan), chosen, view, mine)
            back = sampler.remask(check) & mine
            if progress_violations(back, chosen).any():
                raise RuntimeError(f"sampler {sampler.name!r} sent back as many tokens as it drew in a pass")
            drawn = drawn.masked_fill(back, backbone.mask_id)
            pending[active] = sampler.suspects(view, chosen) & chosen
            prior[active] = torch.log_softmax(out.logits.double(), -1).gather(-1, picked[..., None])[..., 0]
        tokens[active] = drawn
    return DecodeResult(tokens=tokens, passes=passes)

