"""A CDR-H3 loop model that did not write the fills: a second scorer beside AntiBERTy's own PLL
(docs/preregistration.md, amendment 4).

Each residue of a loop of length L is predicted from its position, counted from the nearer end as
IMGT numbers CDR-H3 (105, 106, … from the start; 117, 116, … from the end; the middle, where the
D gene and N additions sit, pooled past :data:`DEPTH`), and from the residue before it (Cys104 before
the first):

    p(x_k | k, L, x_{k−1}) = a·profile(x_k | anchor(k, L)) + b·pair(x_k | x_{k−1}) + (1 − a − b)·background(x_k)

Counts come from training loops only, each lineage weighing one (its rows share it), with
``pseudo`` counts of the background per row of each table. The mixture and the pseudo count are
chosen by held-out log-likelihood on other lineages (:func:`fit_on`). A loop's score is its mean
log-probability per residue (nats/residue).

    model = fit_on(train_loops, train_lineages, calibration_loops)
    model.score("ARDYYGSGSYFDY")     # nats/residue
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass

import numpy as np

from mdm_mi.antibody.data import AMINO

LETTERS = "".join(sorted(AMINO))
INDEX = {c: i for i, c in enumerate(LETTERS)}
DEPTH = 6  # anchored positions from each end kept apart; deeper ones share one middle state
BEFORE = "C"  # Cys104 precedes every CDR-H3 (IMGT 105-117)
MIXTURES = tuple((a, b) for a, b in itertools.product(np.arange(0.0, 1.01, 0.1), repeat=2) if a + b < 0.999)
PSEUDO = (0.02, 0.05, 0.1, 0.5, 1.0, 2.0, 5.0)


def anchor(k: int, length: int, depth: int = DEPTH) -> int:
    """The profile state of residue ``k`` of a loop of ``length``: 0…depth−1 from the start, depth…2·depth−1
    from the end (the last residue is ``depth``), ``2·depth`` for the middle."""
    from_end = length - 1 - k
    if k <= from_end:
        return k if k < depth else 2 * depth
    return depth + from_end if from_end < depth else 2 * depth


@dataclass(frozen=True)
class LoopCounts:
    """Weighted residue counts of training loops: ``background (20,)``, ``profile (2·DEPTH+1, 20)`` by
    anchored state, ``pair (21, 20)`` by the residue before (row 20: Cys104, before the first)."""

    background: np.ndarray
    profile: np.ndarray
    pair: np.ndarray

    @staticmethod
    def of(loops: list[str], weights) -> "LoopCounts":
        bg, prof, pair = np.zeros(20), np.zeros((2 * DEPTH + 1, 20)), np.zeros((21, 20))
        for loop, w in zip(loops, weights):
            prev = 20
            for k, c in enumerate(loop):
                i = INDEX[c]
                bg[i] += w
                prof[anchor(k, len(loop)), i] += w
                pair[prev, i] += w
                prev = i
        return LoopCounts(bg, prof, pair)


@dataclass(frozen=True)
class LoopModel:
    """Smoothed tables of :class:`LoopCounts` and the mixture (a, b) of profile and pair (the rest
    background); :meth:`log_probs` per residue, :meth:`score` the mean."""

    background: np.ndarray
    profile: np.ndarray
    pair: np.ndarray
    a: float
    b: float
    pseudo: float

    @staticmethod
    def smoothed(counts: LoopCounts, a: float, b: float, pseudo: float) -> "LoopModel":
        bg = (counts.background + 1.0) / (counts.background.sum() + 20.0)  # add-one: no residue impossible
        rows = lambda t: (t + pseudo * bg) / (t.sum(1, keepdims=True) + pseudo)  # noqa: E731
        return LoopModel(bg, rows(counts.profile), rows(counts.pair), a, b, pseudo)

    def log_probs(self, loop: str) -> np.ndarray:
        """``(L,)`` natural log-probability of each residue of ``loop`` given its state and the one before."""
        idx = np.array([INDEX[c] for c in loop])
        states = np.array([anchor(k, len(loop)) for k in range(len(loop))])
        prev = np.concatenate([[20], idx[:-1]])
        p = (self.a * self.profile[states, idx] + self.b * self.pair[prev, idx]
             + (1 - self.a - self.b) * self.background[idx])
        return np.log(p)

    def score(self, loop: str) -> float:
        """Mean log-probability per residue of ``loop`` (nats/residue)."""
        return float(self.log_probs(loop).mean())

    def settings(self) -> dict:
        return {"profile_weight": float(self.a), "pair_weight": float(self.b), "pseudo": float(self.pseudo), "depth": DEPTH}


def lineage_weights(lineages: list[str]) -> np.ndarray:
    """Each row's weight 1 / (rows of its lineage): every lineage counts once."""
    n = Counter(lineages)
    return np.array([1.0 / n[g] for g in lineages])


def held_out_nats(model: LoopModel, loops: list[str], weights) -> float:
    """Lineage-weighted mean log-probability per residue over ``loops`` (every residue of a row counts)."""
    total = sum(w * model.log_probs(s).sum() for s, w in zip(loops, weights))
    return float(total / sum(w * len(s) for s, w in zip(loops, weights)))


def fit_on(train: list[str], train_lineages: list[str], held: list[str], held_lineages: list[str]) -> tuple[LoopModel, float]:
    """The model counted on ``train`` whose mixture (:data:`MIXTURES`) and pseudo count (:data:`PSEUDO`)
    give ``held`` (other lineages) the highest lineage-weighted log-likelihood per residue; with it."""
    counts = LoopCounts.of(train, lineage_weights(train_lineages))
    w = lineage_weights(held_lineages)
    fits = ((held_out_nats(m, held, w), m) for m in (LoopModel.smoothed(counts, a, b, s)
                                                    for s in PSEUDO for a, b in MIXTURES))
    best, model = max(fits, key=lambda t: t[0])
    return model, best
