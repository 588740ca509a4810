"""The rivals of Algorithm 1 (docs/record/rivals.md) on hand-built cases: the Sudoku unit-disjoint rule and
DEMASK's greedy selection rule."""

from __future__ import annotations

import math

import pytest
import torch

from mdm_mi.core.samplers import ConfidenceThreshold, StepView, decode
from mdm_mi.infra.errors import InputError
from mdm_mi.mi.demask import DemaskMI, demask_select, demask_walk
from mdm_mi.sampling.registry import build_sampler
from mdm_mi.sudoku.grid import MASK_ID, N_CELLS, N_DIGITS, peer_matrix
from mdm_mi.sudoku.unit_disjoint import UnitDisjoint

PEERS = torch.from_numpy(peer_matrix())


def _view(entropy, masked, confidence=None, pairwise=None) -> StepView:
    entropy = torch.as_tensor(entropy, dtype=torch.float32).masked_fill(~masked, math.inf)
    conf = None if confidence is None else torch.as_tensor(confidence, dtype=torch.float32).masked_fill(~masked, -math.inf)
    return StepView(masked=masked, entropy=entropy, margin=torch.zeros_like(entropy), confidence=conf, pairwise=pairwise)


def _cells(chosen: torch.Tensor) -> list[list[int]]:
    return [row.nonzero().flatten().tolist() for row in chosen]


def test_unit_disjoint_skips_a_peer_and_admits_a_cell_of_another_row_column_and_box():
    masked = torch.zeros(1, N_CELLS, dtype=torch.bool)
    masked[0, [0, 1, 40]] = True  # r1c1, r1c2 (its row peer), r5c5 (no unit shared with r1c1)
    entropy = torch.zeros(1, N_CELLS)
    entropy[0, [0, 1, 40]] = torch.tensor([0.1, 0.2, 0.3])
    assert _cells(UnitDisjoint(gamma=10.0, peers=0).select(_view(entropy, masked))) == [[0, 40]]
    assert _cells(UnitDisjoint(gamma=10.0, peers=1).select(_view(entropy, masked))) == [[0, 1, 40]]
    assert _cells(UnitDisjoint(gamma=0.05, peers=0).select(_view(entropy, masked))) == [[0]]  # γ spent by r1c1


@pytest.mark.parametrize("seed", range(20))
def test_unit_disjoint_never_admits_two_peers_in_one_pass(seed):
    gen = torch.Generator().manual_seed(seed)
    masked = torch.rand(8, N_CELLS, generator=gen) < torch.rand(8, 1, generator=gen)
    masked[:, 0] = True
    entropy = torch.rand(8, N_CELLS, generator=gen)
    chosen = UnitDisjoint(gamma=1e9, peers=0).select(_view(entropy, masked))
    assert not (chosen & ~masked).any() and chosen.any(1).all()
    together = chosen[:, :, None] & chosen[:, None, :] & PEERS
    assert not together.any()
    # with γ unbounded the set is maximal: every masked cell left out has a peer in it
    left_out = masked & ~chosen
    assert ((PEERS[None].float() @ chosen[:, :, None].float()).squeeze(-1)[left_out] >= 1).all()


@pytest.mark.parametrize("peers", [1, 2])
def test_unit_disjoint_admits_no_cell_with_more_peers_than_its_cap(peers):
    gen = torch.Generator().manual_seed(peers)
    masked = torch.ones(4, N_CELLS, dtype=torch.bool)
    chosen = UnitDisjoint(gamma=1e9, peers=peers).select(_view(torch.rand(4, N_CELLS, generator=gen), masked))
    # every admitted cell had at most `peers` admitted peers when it was admitted, so the peer graph
    # restricted to the pass has at most `peers` · |U| edges
    edges = (chosen[:, :, None] & chosen[:, None, :] & PEERS).sum((1, 2)) / 2
    assert (edges <= peers * chosen.sum(1)).all()


def test_unit_disjoint_decodes_a_grid_in_at_least_a_ninth_of_its_masks_passes(mock_backbone):
    logits = 3 * torch.randn(N_CELLS, N_DIGITS, generator=torch.Generator().manual_seed(0))
    backbone = mock_backbone(logits, MASK_ID)
    tokens = torch.full((2, N_CELLS), MASK_ID)
    result = decode(backbone, tokens, build_sampler("unit-disjoint", gamma=1e9, peers=0))
    assert (result.tokens != MASK_ID).all()
    assert (result.passes >= math.ceil(N_CELLS / 9)).all()


def test_unit_disjoint_refuses_a_sequence_that_is_not_a_sudoku_grid():
    masked = torch.ones(1, 10, dtype=torch.bool)
    with pytest.raises(InputError, match="81 cells"):
        UnitDisjoint(gamma=1.0, peers=0).select(_view(torch.rand(1, 10), masked))
    with pytest.raises(ValueError, match="whole number"):
        UnitDisjoint(gamma=1.0, peers=0.5)


def test_demask_rule_hand_built():
    conf = [0.99, 0.98, 0.97, 0.5]
    dep = [[0, 0.08, 0.01, 0], [0.08, 0, 0.01, 0], [0.01, 0.01, 0, 0], [0, 0, 0, 0]]
    # 0 first; 1 would add 0.08 > ε = 0.05: skipped; 2 adds 0.01; 3 is under τ
    assert demask_select(conf, [True] * 4, dep, tau=0.9, eps=0.05) == [0, 2]
    assert demask_select(conf, [True] * 4, dep, tau=0.9, eps=0.09) == [0, 1]  # 1 fits (0.08), then 2 would bring 0.10
    assert demask_select(conf, [True] * 4, dep, tau=0.995, eps=1.0) == [0]  # none over τ: the most confident
    assert demask_select(conf, [False, True, True, True], dep, tau=0.9, eps=0.0) == [1]


@pytest.mark.parametrize("seed", range(10))
def test_demask_walk_is_the_rule_as_written(seed):
    gen = torch.Generator().manual_seed(seed)
    b, n = 6, 12
    masked = torch.rand(b, n, generator=gen) < 0.7
    masked[:, 0] = True
    conf = torch.rand(b, n, generator=gen)
    dep = torch.rand(b, n, n, generator=gen) * 0.1
    dep = (dep + dep.transpose(1, 2)) / 2
    tau, eps = 0.3, 0.15
    got = _cells(demask_walk(conf.masked_fill(~masked, -math.inf), masked, dep, tau, eps))
    want = [demask_select(conf[r].tolist(), masked[r].tolist(), dep[r].double().tolist(), tau, eps) for r in range(b)]
    assert got == want


def test_demask_with_unbounded_budget_is_the_confidence_threshold():
    gen = torch.Generator().manual_seed(3)
    masked = torch.rand(5, 20, generator=gen) < 0.8
    masked[:, 3] = True
    conf = torch.rand(5, 20, generator=gen)
    view = _view(torch.zeros(5, 20), masked, confidence=conf, pairwise=torch.rand(5, 20, 20, generator=gen))
    assert torch.equal(DemaskMI(tau=0.5, eps=math.inf).select(view), ConfidenceThreshold(tau=0.5).select(view))
    alone = DemaskMI(tau=0.0, eps=0.0).select(view)  # every pair depends: one position per pass
    assert (alone.sum(1) == 1).all()


def test_the_comparisons_feed_each_family_the_matrix_its_entry_names(tiny_model, easy_puzzles):
    """sudoku-compare's decoder: demask and mi-tv (``TV_HEAD``) read the TV head's matrix, demask-mi and
    mi (``HEAD``) the MI head's, unit-disjoint none."""
    import numpy as np

    from mdm_mi.core.sampler_table import HEAD, SAMPLERS, TV_HEAD
    from mdm_mi.sudoku.compare import Decoder
    from mdm_mi.sudoku.data import PuzzleSet

    seen = []

    def source(name):
        def fn(output, masked, tokens=None):
            seen.append(name)
            b, n = masked.shape
            return torch.zeros(b, n, n)
        return fn

    puzzles = PuzzleSet(np.asarray(easy_puzzles[0][:2]), np.asarray(easy_puzzles[1][:2]), ["easy"] * 2)
    decoder = Decoder(tiny_model, source("mi"), 2, 0, source("tv"))
    for name, params in [("demask", {"tau": 0.9, "eps": 0.1}), ("mi-tv", {"gamma": 0.5, "lam": 1.0, "on_reject": "skip",
                          "charge_first": False}), ("demask-mi", {"tau": 0.9, "eps": 0.1}), ("unit-disjoint", {"gamma": 0.5, "peers": 0}),
                         ("dapd", {"gamma": 0.5, "theta": 1.0})]:
        seen.clear()
        decoder(puzzles, build_sampler(name, **params))
        want = {TV_HEAD: {"tv"}, HEAD: {"mi"}}.get(SAMPLERS[name].pairwise, set())  # dapd: the model's attention
        assert set(seen) == want, name


def test_the_decoding_verbs_make_a_matrix_only_for_a_sampler_that_reads_it(tiny_model):
    """``run_models.pairwise_from_args`` goes through the one dispatcher: the head is loaded (here: its
    loader called) for a sampler reading the MI head only, the oracle probes for ``mi-oracle`` only,
    DAPD gets the model's attention of each pass, and a sampler reading a matrix the run lacks is one line."""
    from mdm_mi.core.sampler_table import HEAD, ORACLE
    from mdm_mi.core.samplers import decode
    from mdm_mi.infra.errors import InputError
    from mdm_mi.mi.pairwise import pairwise_source

    made = []
    loaders = {HEAD: lambda: made.append("head") or "head-fn", ORACLE: lambda: made.append("oracle") or "oracle-fn"}
    for name, want in (("eb", None), ("unit-disjoint", None), ("mi", "head-fn"), ("mi-2b", "head-fn"),
                       ("mi-oracle", "oracle-fn")):
        made.clear()
        with pairwise_source(tiny_model, name, loaders=loaders) as fn:
            assert fn == want and made == ([want.split("-")[0]] if want else []), name
    made.clear()
    with pairwise_source(tiny_model, "dapd", loaders=loaders) as fn:
        out = decode(tiny_model, torch.full((2, 81), tiny_model.mask_id), build_sampler("dapd", gamma=0.5, theta=1.0),
                     pairwise_fn=fn)
    assert out.passes.min() >= 1 and not made
    with pytest.raises(InputError, match="reads the tv-head, which this run was not given"):
        with pairwise_source(tiny_model, "demask", loaders=loaders):
            pass


def test_dapd_never_admits_two_positions_joined_in_the_attention_graph():
    from mdm_mi.mi.dapd import Dapd

    gen = torch.Generator().manual_seed(0)
    b, n = 6, 30
    att = torch.rand(b, n, n, generator=gen).softmax(-1)
    att = (att + att.transpose(1, 2)) / 2
    masked = torch.rand(b, n, generator=gen) < 0.8
    masked[:, 0] = True
    chosen = Dapd(gamma=1e9, theta=1.0).select(_view(torch.rand(b, n, generator=gen), masked, pairwise=att))
    edges = (att > 1.0 / n) & ~torch.eye(n, dtype=torch.bool)
    assert not (chosen[:, :, None] & chosen[:, None, :] & edges).any() and chosen.any(1).all()
    left_out = masked & ~chosen  # maximal: each left-out masked position has an edge into the set
    assert ((edges.float() @ chosen[:, :, None].float()).squeeze(-1)[left_out] >= 1).all()
    free = Dapd(gamma=1e9, theta=1e9).select(_view(torch.rand(b, n, generator=gen), masked, pairwise=att))
    assert torch.equal(free, masked)  # no edge: every masked position at once


def test_dapd_reads_the_attention_of_the_same_pass_and_costs_no_extra_pass(tiny_model):
    from mdm_mi.mi.dapd import Dapd, attention_source

    tokens = torch.full((3, N_CELLS), MASK_ID)
    tokens[:, :20] = torch.randint(0, N_DIGITS, (3, 20), generator=torch.Generator().manual_seed(1))
    calls = []
    with attention_source(tiny_model) as fn:
        def spy(output, masked, sub):
            att = fn(output, masked, sub)
            calls.append(att)
            return att
        result = decode(tiny_model, tokens, Dapd(gamma=1.0, theta=1.0), pairwise_fn=spy)
    assert len(calls) == int(result.passes.max())  # one attention matrix per pass, from that pass
    first = calls[0]
    with torch.inference_mode():
        x = tiny_model.tok(tokens) + tiny_model.row(tiny_model.row_id) + tiny_model.col(tiny_model.col_id)
        for block in tiny_model.blocks[:-1]:
            x = block(x)
        att = tiny_model.blocks[-1].attention(x)
    assert torch.allclose(first, (att + att.transpose(1, 2)) / 2, atol=1e-6)
    assert torch.allclose(att.sum(-1), torch.ones(3, N_CELLS), atol=1e-5)
    with pytest.raises(InputError, match="does not expose its attention"):
        with attention_source(object()):
            pass


def test_a_backbone_without_attention_is_refused_before_any_decoding():
    """protein-compare's check: DAPD families on a backbone without capture_attention (the column model)
    are one InputError naming the backbone; other families pass."""
    from mdm_mi.evaluation.calibrate import Family
    from mdm_mi.protein.compare_jobs import _check_attention

    class NoAttention:
        pass

    from mdm_mi.sampling.registry import SAMPLER_CLASSES

    dapd = Family("dapd θ=1", "dapd", "gamma", 1e-3, 10.0, "log", False, {"theta": 1.0}, cls=SAMPLER_CLASSES["dapd"])
    eb = Family("eb", "eb", "gamma", 1e-3, 10.0, "log", False, {}, cls=SAMPLER_CLASSES["eb"])
    _check_attention(NoAttention(), [eb])
    with pytest.raises(InputError, match="NoAttention does not expose"):
        _check_attention(NoAttention(), [eb, dapd])


def test_the_protein_table_marks_a_contrast_with_a_family_off_its_budget():
    """protein-compare's markdown: mi* against a contender that missed its budget (DEMASK's ε binding)
    is marked †: it is not at the same passes."""
    from mdm_mi.protein.compare_jobs import protein_markdown

    def run(family, d, on_target=True):
        return {"family": family, "divisor": d, "jsd": 0.1, "jsd_lo": 0.08, "jsd_hi": 0.12, "mean_passes": 10.0,
                "n": 4, "target": 10.0, "on_target": on_target, "calib_score": 0.0}

    summary = {"sequential": run("sequential", 1), "eb@1/2": run("eb", 2), "mi@1/2": run("mi λ=1", 2),
               "demask@1/2": run("demask ε=0.5", 2, on_target=False)}
    row = {"divisor": 2, "first": "mi*", "diff": 0.02, "lo": 0.01, "hi": 0.03, "p_value": 0.01, "verdict": "worse"}
    text = protein_markdown(summary, [row | {"second": "eb"}, row | {"second": "demask ε=0.5"}])
    assert "p=0.01 **worse**† |" in text and "p=0.01 **worse** |" in text
