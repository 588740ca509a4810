"""The paper's reported numbers (arXiv 2605.20187), for tables and figures beside ours.

Sudoku: accuracy (%) and mean forward passes on 1000 unseen hard puzzles (paper's Table 1).
Proteins: mean forward passes and JSD of k-means(k=15) cluster histograms (paper's Table 2).
"""

from __future__ import annotations

# (sampler, setting label, params to match ours, mean passes, accuracy %)
SUDOKU = [
    ("sequential", "one token per pass", {"order": "entropy"}, 53.9, 61.6),
    ("mi", "MI-guided γ=0.3", {"gamma": 0.3}, 15.2, 63.6),
    ("eb", "EB-Sampler γ=0.2", {"gamma": 0.2}, 15.3, 61.0),
    ("naive", "naive top-k k=4", {"k": 4}, 14.9, 52.4),
]

# (sampler, setting label, params, mean passes, JSD)
PROTEIN = [
    ("sequential", "one token per pass", {}, 74.8, 0.093),
    ("mi", "MI-guided γ=4", {"gamma": 4.0}, 10.0, 0.174),
    ("naive", "naive top-k k=8", {"k": 8}, 9.8, 0.196),
]

# A published figure beside the paper's, cited (not a result of this project): a small MDM's hard-Sudoku accuracy
SMALL_MDM_SUDOKU = {
    "accuracy_pct": 49.88,
    "what": "a 6M MDM with margin ordering on their hard split",
    "reference": "Kim et al. 2025",
    "source": "Train for the Worst, Plan for the Best (arXiv 2502.06768)",
}
