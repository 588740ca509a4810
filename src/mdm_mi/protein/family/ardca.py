"""ArDCA, the family's own generator: an autoregressive Potts model of the match columns (Trinquier,
Uguzzoni, Pagnani, Zamponi & Weigt 2021, "Efficient generative modeling of protein sequences using
simple autoregressive models", Nat Commun 12:5800), the family table's ``ardca`` row.

    codes = encode_columns([r.columns for r in train])        # (n, 53), gap = GAP_INDEX
    model = fit(codes, identity_weights(codes))                # one logistic regression per column
    records = sample(model, 630, np.random.default_rng(0))    # FamilyRecords named ardca_<k>

The model is ``P(a_1 … a_L) = Π_i P(a_i | a_1 … a_{i-1})`` over the 21-letter column
alphabet (gap included), in the alignment's own column order (the paper's "natural" order; its
package defaults to ordering columns by entropy), with ``P(a_1)`` the weighted frequencies of column 1
and, for ``i > 1``, ``P(a_i = a | a_<i) ∝ exp(h_i(a) + Σ_{j<i} J_ij(a, a_j))``: one multinomial logistic
regression of column ``i`` on the one-hot of columns ``1 … i-1``, fitted by L-BFGS (scikit-learn) on
the weighted log-likelihood with an L2 penalty on the couplings. Each regression is convex,
so the fit is deterministic; sampling draws the columns in order (exact, no Markov chain).

Choices: sequence weights are the paper's ``1 / #{m' : identity(m, m') ≥ 0.8}``, with this project's
identity (:func:`~mdm_mi.protein.family.alignment.pairwise_identity`: residues only, gaps never
identical) rather than the paper's identity over all 21 letters, gaps included; the fields are not penalised
(scikit-learn's intercepts; the paper's field penalty is far weaker than the couplings'); a letter a column never holds
in training is never sampled there.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_matrix  # scipy comes with scikit-learn
from threadpoolctl import threadpool_limits  # so does threadpoolctl

from mdm_mi.infra.errors import InputError
from mdm_mi.protein.family.alignment import FamilyRecord, GAP_INDEX, N_LETTERS, identity_blocks, records_from_codes

LAMBDA_J = 1e-4  # L2 strength on the couplings per unit total weight: the weak setting used for sampling
# (ArDCA.jl's default, 0.01, smooths more; a Python port, tferracina/ArDCA-Python, defaults to 1e-4)
REWEIGHT_IDENTITY = 0.8  # a sequence's weight is 1 / its neighbours at this identity or above (paper)
MAX_ITER = 1000  # L-BFGS iterations per column (scikit-learn's default 100 stops short at this λ)


@dataclass(frozen=True)
class ArDCA:
    """Fitted parameters. ``fields`` ``(L, 21)``: ``h_i(a)``, ``-inf`` where column ``i`` never held
    ``a`` in training (row 0: the log weighted frequencies of column 1); ``couplings`` ``(L, 21, L*21)``:
    ``couplings[i, a, j*21 + b] = J_ij(a, b)``, zero for ``j ≥ i``."""

    fields: np.ndarray
    couplings: np.ndarray

    @property
    def length(self) -> int:
        return self.fields.shape[0]


def identity_weights(codes: np.ndarray, identity: float = REWEIGHT_IDENTITY) -> np.ndarray:
    """Codes ``(n, L)`` → weights ``(n,)``: 1 / the number of records (itself included) at
    :func:`~mdm_mi.protein.family.alignment.pairwise_identity` ``≥ identity``; they sum to the
    effective number of sequences (paper, Methods)."""
    if not 0 < identity <= 1:
        raise InputError(f"reweighting identity must lie in (0, 1], got {identity}")
    neighbours = np.zeros(len(codes))
    for start, block in identity_blocks(codes, codes):
        neighbours[start : start + len(block)] = (block >= identity).sum(1)
    return 1.0 / neighbours


def one_hot(codes: np.ndarray) -> csr_matrix:
    """Codes ``(n, L)`` → sparse ``(n, L*21)`` one-hot over the 21 letters (gap is a letter here)."""
    n, length = codes.shape
    cols = (codes + N_LETTERS * np.arange(length)).ravel()
    return csr_matrix((np.ones(n * length), (np.repeat(np.arange(n), length), cols)), shape=(n, length * N_LETTERS))


def _first_column(column: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Column 1's codes ``(n,)`` → its log weighted frequencies ``(21,)`` (``-inf`` for absent letters)."""
    freq = np.bincount(column, weights=weights, minlength=N_LETTERS) / weights.sum()
    with np.errstate(divide="ignore"):
        return np.log(freq)


def _fit_column(x: csr_matrix, y: np.ndarray, weights: np.ndarray, lam: float) -> tuple[np.ndarray, np.ndarray]:
    """One conditional ``P(a_i | a_<i)``: one-hot of the earlier columns ``x`` ``(n, i*21)``,
    codes ``y`` ``(n,)``, weights ``(n,)`` summing to 1 → ``(h_i (21,), J_i (21, i*21))``.

    scikit-learn minimises ``C Σ w ℓ + ||J||² / 2``; with ``C = 1 / (2λ)`` that is the paper's
    ``Σ w ℓ + λ ||J||²`` over ``2λ``, the same minimum. A column with one letter in training is that letter."""
    from sklearn.linear_model import LogisticRegression  # lazy: scikit-learn adds ~1 s to every CLI start

    field = np.full(N_LETTERS, -np.inf)
    coupling = np.zeros((N_LETTERS, x.shape[1]))
    letters = np.unique(y)
    if len(letters) == 1:
        field[letters[0]] = 0.0
        return field, coupling
    reg = LogisticRegression(C=1 / (2 * lam), solver="lbfgs", max_iter=MAX_ITER)
    reg.fit(x, y, sample_weight=weights)
    coef, intercept = reg.coef_, reg.intercept_
    if len(letters) == 2:  # binary: one logit for the second letter against the first
        coef, intercept = np.vstack([np.zeros_like(coef), coef]), np.concatenate([[0.0], intercept])
    field[reg.classes_], coupling[reg.classes_] = intercept, coef
    return field, coupling


def fit(codes: np.ndarray, weights: np.ndarray | None = None, lam: float = LAMBDA_J) -> ArDCA:
    """Fit ArDCA to codes ``(n, L)`` (letters of the 21-letter column alphabet) with sequence
    ``weights`` ``(n,)`` (default: all 1; the paper's are :func:`identity_weights`) → :class:`ArDCA`."""
    assert codes.ndim == 2 and codes.shape[0] >= 1, codes.shape
    if codes.min() < 0 or codes.max() >= N_LETTERS:
        raise InputError(f"codes must lie in 0..{N_LETTERS - 1}, got {codes.min()}..{codes.max()}")
    weights = np.ones(len(codes)) if weights is None else np.asarray(weights, dtype=np.float64)
    assert weights.shape == (len(codes),), (weights.shape, codes.shape)
    if lam <= 0 or (weights < 0).any() or weights.sum() <= 0:
        raise InputError(f"ArDCA needs λ > 0 and non-negative weights with a positive sum, got λ = {lam}")
    codes, weights = _merge_duplicates(codes, weights / weights.sum())
    length = codes.shape[1]
    x = one_hot(codes)
    fields = np.empty((length, N_LETTERS))
    couplings = np.zeros((length, N_LETTERS, length * N_LETTERS))
    fields[0] = _first_column(codes[:, 0], weights)
    with threadpool_limits(1):  # one summation order: the same parameters, to the last bit, on any machine
        for i in range(1, length):
            fields[i], couplings[i, :, : i * N_LETTERS] = _fit_column(x[:, : i * N_LETTERS], codes[:, i], weights, lam)
    return ArDCA(fields, couplings)


def _merge_duplicates(codes: np.ndarray, weights: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Identical rows of codes ``(n, L)`` merged, their weights ``(n,)`` summed → ``(k, L), (k,)``: the
    weighted likelihood is unchanged and each regression sees fewer rows (2,532 of Kunitz's 3,369)."""
    unique, inverse = np.unique(codes, axis=0, return_inverse=True)
    return unique, np.bincount(inverse.ravel(), weights=weights, minlength=len(unique))


def _draw(logits: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """One letter per row of ``logits`` ``(n, 21)`` (``-inf`` = impossible) → codes ``(n,)``."""
    p = np.exp(logits - logits.max(1, keepdims=True))
    cdf = np.cumsum(p, axis=1)
    cdf /= cdf[:, -1:]
    return (rng.random((len(logits), 1)) >= cdf).sum(1)  # the first letter whose cdf exceeds u: p > 0


def sample_codes(model: ArDCA, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` autoregressive draws (column 1 first, each column given the ones drawn before) → codes
    ``(n, L)``. The same ``rng`` state gives the same draws."""
    length = model.length
    codes = np.empty((n, length), dtype=np.int64)
    x = np.zeros((n, length * N_LETTERS))
    for i in range(length):
        logits = model.fields[i] + x[:, : i * N_LETTERS] @ model.couplings[i, :, : i * N_LETTERS].T
        codes[:, i] = _draw(logits, rng)
        x[np.arange(n), i * N_LETTERS + codes[:, i]] = 1.0
    return codes


def sample(model: ArDCA, n: int, rng: np.random.Generator) -> list[FamilyRecord]:
    """``n`` sequences of the model as records named ``ardca_<k>`` (sequence = the draw without gaps,
    no insertions), as :func:`~mdm_mi.protein.family.alignment.sample_profile` returns the floor; a
    draw that is all gaps is redrawn."""
    codes = np.empty((0, model.length), dtype=np.int64)
    while len(codes) < n:
        draw = sample_codes(model, n - len(codes), rng)
        codes = np.concatenate([codes, draw[(draw != GAP_INDEX).any(1)]])
    return records_from_codes(codes, "ardca")
