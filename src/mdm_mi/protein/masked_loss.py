"""The masked-token loss of a protein model (the training's validation loss and ``family-loss``): has
the family model learned more than a column profile? Its held-out masked-token loss at fixed mask rates t, beside the two site-independent baselines of :func:`mdm_mi.protein.family.alignment.baseline_losses`.

Each residue of each reference sequence is masked with probability t (seeded; BOS/EOS never), the
model sees the rest, and the loss is the mean cross-entropy (nats) of its 20 amino-acid logits over
all masked residues. The baselines ignore the context: amino-acid composition, and the alignment's
column profile (a residue scored by its match column's frequencies; insertions by composition). A
model that has learned the family's couplings beats the profile at small t, where most of the
context is visible.

    mdm-mi family-loss --model results/x/protein/model --data-dir results/x/protein/data --out loss.json
"""

from __future__ import annotations

import math

import numpy as np
import torch

from mdm_mi.infra.fasta import AMINO_ACIDS
from mdm_mi.infra.reader import MASK_CHAR

MASK_RATES = (0.15, 0.5, 0.9)  # the held-out masked loss's mask rates t (the column models' too)
LOSS_BATCH = 64  # sequences per forward pass


@torch.inference_mode()
def masked_loss(backbone, seqs: list[str], t: float, seed: int, batch_size: int = LOSS_BATCH) -> tuple[float, int]:
    """Mean cross-entropy (nats) over residues masked at rate ``t`` → (loss, masked residues)."""
    rng = np.random.default_rng([seed, round(1000 * t)])
    masks = [rng.random(len(s)) < t for s in seqs]
    total, count = 0.0, 0
    for start in range(0, len(seqs), batch_size):
        part, mparts = seqs[start:start + batch_size], masks[start:start + batch_size]
        shown = ["".join(MASK_CHAR if m else c for c, m in zip(s, mk)) for s, mk in zip(part, mparts)]
        logp = torch.log_softmax(backbone(backbone.encode(shown)).logits, dim=-1)  # (B, N, 20)
        for b, (s, mk) in enumerate(zip(part, mparts)):
            pos = np.flatnonzero(mk)
            if len(pos):
                target = torch.tensor([AMINO_ACIDS.index(s[i]) for i in pos])
                total -= float(logp[b, torch.as_tensor(pos) + 1, target].sum())  # +1: BOS
                count += len(pos)
    return (total / count if count else math.nan), count


#END
