"""The Sudoku unit-disjoint rule: a structural baseline that knows the constraint graph.

DUS (arXiv 2506.19037) unmasks, in one pass, groups of positions that are not adjacent, so that no
two tokens decoded together depend directly on each other. Sudoku's own adjacency is the peer graph
(:func:`mdm_mi.sudoku.grid.peer_matrix`: two cells are peers when they share a row, a column or a
box), so the rule here walks the masked cells by increasing entropy under EB-Sampler's entropy
budget γ and skips any cell with more than ``peers`` peers among the cells already admitted this pass
(``peers = 0``: no two peers ever in one pass, the DUS reading). It reads no model but the pass's
marginals and no MI: it is the free rival that a dependence head must beat. With ``peers = 0`` a
pass admits at most 9 cells (an independent set of the peer graph holds at most one cell per row),
so the rule cannot go below ⌈|M| / 9⌉ passes whatever γ is.

    sampler = UnitDisjoint(gamma=0.5, peers=0)
    result = decode(model, puzzles, sampler)
"""

from __future__ import annotations

import torch

from mdm_mi.core.sampler_spec import Flag, SamplerSpec, Setting, Style, gamma_calibration
from mdm_mi.core.samplers import Sampler, StepView
from mdm_mi.infra.errors import InputError
from mdm_mi.mi.decoding_rules import eb_walk
from mdm_mi.sudoku.grid import N_CELLS, peer_matrix

_PEERS = torch.from_numpy(peer_matrix())  # (81, 81) bool, built once


class UnitDisjoint(Sampler):
    """EB's entropy budget γ (nats) and at most ``peers`` admitted peers per admitted cell.

    ``select(view)``: ``view.masked (B, 81)`` → ``(B, 81)`` bool, the lowest-entropy masked cell of
    every row plus each later one (by increasing entropy) admitted by :func:`mdm_mi.mi.decoding_rules.eb_walk`
    with Î the 0/1 peer adjacency and ``candidate_cap = peers``.
    """

    name = "unit-disjoint"
    spec = SamplerSpec(("gamma", "peers"), style=Style("unit-disjoint", "xkcd:teal"),
                       own_flags={"peers": Flag("float | None", "at most this many peers (same row, column or box) admitted with a cell "
                                                                 "in one pass; default: the comparisons' peers")},
                       calibration=gamma_calibration(each=Setting("peers", "unit_disjoint_peers", "p", "peers",
                                                                  "unit-disjoint: peer caps (0: no two peers in a pass), each calibrated; "
                                                                  "none: no unit-disjoint")))

    def __init__(self, gamma: float, peers: float):
        if not gamma >= 0:
            raise ValueError(f"{self.name} gamma must be >= 0, got {gamma}")
        if not (peers >= 0 and float(peers).is_integer()):
            raise ValueError(f"{self.name} peers must be a whole number >= 0, got {peers}")
        self.gamma, self.peers = float(gamma), int(peers)

    def select(self, view: StepView) -> torch.Tensor:
        b, n = view.masked.shape
        if n != N_CELLS:
            raise InputError(f"sampler {self.name!r} decodes 9x9 Sudoku grids ({N_CELLS} cells), got {n} positions")
        adjacency = _PEERS.to(device=view.masked.device, dtype=torch.float32).expand(b, n, n)
        return eb_walk(view.entropy, view.masked, adjacency, self.gamma, candidate_cap=self.peers)

    def params(self) -> dict:
        return {"gamma": self.gamma, "peers": self.peers}
