"""The χ² check that the project's own decode draws from an enumerated distribution on a testbed chain,
shared by the remasking tests (tests/test_remask.py, tests/test_newer_rules.py)."""

from __future__ import annotations

import math

import torch

from mdm_mi.testbed.exact_kl import draw_decodes


def assert_decode_draws(chain, prompt: torch.Tensor, sampler, fn, q: torch.Tensor, seed: int, n: int = 20_000):
    """``n`` decodes of ``prompt (1 + N,)`` match ``q`` (one probability per completion, in
    :func:`mdm_mi.testbed.exact_kl.completions` order) by a χ² test; returns the draws."""
    n_states = chain.chain.n_states
    drawn = draw_decodes(chain, prompt.expand(n, -1), sampler, torch.Generator().manual_seed(seed), fn)
    code = (drawn.tokens[:, 1:] * n_states ** torch.arange(prompt.shape[0] - 2, -1, -1)).sum(1)  # completions order
    counts = torch.bincount(code, minlength=len(q)).double()
    live = q > 1e-9
    chi2 = float((((counts - n * q) ** 2)[live] / (n * q[live])).sum())
    df = int(live.sum()) - 1
    assert chi2 < df + 6 * math.sqrt(2 * df), (chi2, df)
    return drawn
