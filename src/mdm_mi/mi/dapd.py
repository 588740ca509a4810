"""DAPD's attention-graph rule (Kim, Jeon, Jeon & No 2026, "DAPD: Dependency-aware parallel decoding via
attention for diffusion LLMs", arXiv 2603.12996), training-free: the backbone's own self-attention
induces a dependency graph over the masked positions, and each pass unmasks an independent set of it.

The reading used here (the paper's method section could not be read; ``docs/record/rivals.md``):

* the graph: the last block's attention of the same pass, averaged over heads and symmetrised,
  ``Ā = (A + Aᵀ) / 2``; an edge joins masked ``i, j`` when ``Ā_ij > θ / N`` (θ = 1: above the uniform
  attention ``1 / N`` of an ``N``-token context, so θ does not depend on the length);
* the set: masked positions walked by increasing entropy, each admitted unless it has an edge to
  one already admitted (a greedy maximal independent set, low entropy first), under EB-Sampler's
  entropy budget γ, the knob the comparisons calibrate to a number of passes — the walk of
  :class:`mdm_mi.mi.decoding_rules.IndependentSet` (``mi-indep``) with the attention graph for the MI head's.

A backbone exposes its attention by a ``capture_attention()`` context (:class:`mdm_mi.sudoku.model.SudokuMDM`,
:class:`mdm_mi.hf.model.HFBackbone`: AntiBERTy and any Hugging Face masked LM);
:func:`attention_source` takes it from the pass ``decode`` runs anyway, so DAPD costs no extra pass.

    with attention_source(model) as fn:
        result = decode(model, puzzles, Dapd(gamma=0.5, theta=1.0), pairwise_fn=fn)
"""

from __future__ import annotations

from contextlib import contextmanager

import torch

from mdm_mi.core.sampler_table import ATTENTION
from mdm_mi.core.sampler_spec import Flag, SamplerSpec, Setting, Style, gamma_calibration
from mdm_mi.core.samplers import Sampler, StepView
from mdm_mi.infra.errors import InputError
from mdm_mi.mi.decoding_rules import _check, eb_walk


class Dapd(Sampler):
    """EB's entropy budget γ (nats) and no two admitted positions joined in the attention graph
    (``Ā_ij > θ / N``). ``view.pairwise (B, N, N)``: the symmetrised attention of the pass."""

    name = "dapd"
    uses_pairwise = True
    spec = SamplerSpec(("gamma", "theta"), ATTENTION, user=False, style=Style("DAPD", "tab:cyan"),
                       own_flags={"theta": Flag("float | None", "attention-edge threshold θ (× the uniform 1/N); default: the comparisons' θ")},
                       calibration=gamma_calibration(each=Setting("theta", "dapd_theta", "t", "θ", "dapd: attention-edge thresholds θ "
                                                                  "(× the uniform 1/N), each calibrated; none: no dapd")))

    def __init__(self, gamma: float, theta: float):
        _check(self.name, gamma=gamma, theta=theta)
        self.gamma, self.theta = float(gamma), float(theta)

    def select(self, view: StepView) -> torch.Tensor:
        if view.pairwise is None:
            raise ValueError(f"sampler {self.name!r} needs view.pairwise: the attention (B, N, N)")
        n = view.masked.shape[1]
        return eb_walk(view.entropy, view.masked, view.pairwise, self.gamma, pair_cap=self.theta / n)

    def params(self) -> dict:
        return {"gamma": self.gamma, "theta": self.theta}


@contextmanager
def attention_source(backbone):
    """A ``pairwise_fn`` (for :func:`mdm_mi.core.samplers.decode`) giving each pass's symmetrised
    attention ``(B, N, N)``, captured from that very pass by the backbone's ``capture_attention()``;
    one-line :class:`InputError` for a backbone without one."""
    capture = getattr(backbone, "capture_attention", None)
    if capture is None:
        raise InputError(f"{type(backbone).__name__} does not expose its attention: DAPD needs a transformer "
                         "backbone with capture_attention() (the Sudoku model, a Hugging Face model)")
    with capture() as seen:
        def fn(output, masked: torch.Tensor, tokens=None) -> torch.Tensor:
            att = torch.cat(seen)  # the chunks of this pass, in row order
            seen.clear()
            assert att.shape == (*masked.shape, masked.shape[1]), (att.shape, masked.shape)
            return (att + att.transpose(1, 2)) / 2

        yield fn

