"""The exact testbed (:mod:`mdm_mi.testbed`): the chain against brute-force enumeration, q(x) by path
replay against the enumerated output distribution of the project's samplers, and the study's tables."""

from __future__ import annotations

import dataclasses
import itertools
import math

import pytest
import torch

from mdm_mi.core.samplers import EntropyBounded, NaiveTopK, Sequential, StepView
from mdm_mi.mi.guided import MIGuided, OracleMI
from mdm_mi.testbed.chain import ChainBackbone, PottsChain, exact_pairwise_fn
from mdm_mi.testbed.exact_kl import completions, draw_decodes, enumerate_kl, replay
from mdm_mi.testbed.noise import calibrate_sigma, noisy_pairwise_fn, random_contexts
from mdm_mi.testbed.regimes import REGIMES, build_chain, valid_mass
from mdm_mi.testbed.report import read_table, render_table, write_tables
from mdm_mi.testbed.study import StudySettings, run_study

N_SITES, N_STATES, INSTANCE = 5, 3, 1  # the tiny chain: 3^5 = 243 sequences; instance 1 of 2


@pytest.fixture(scope="module")
def tiny() -> ChainBackbone:
    """Two instances of a 5-site, 3-state chain with random fields and random (not only diagonal) couplings."""
    g = torch.Generator().manual_seed(7)
    fields = torch.randn(2, N_SITES, N_STATES, generator=g, dtype=torch.float64)
    couplings = 1.5 * torch.randn(N_SITES - 1, N_STATES, N_STATES, generator=g, dtype=torch.float64)
    return ChainBackbone(PottsChain(fields, couplings))


def _brute(model: ChainBackbone, sites: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Enumerated marginals ``(N, q)`` and pairwise MI ``(N, N)`` of instance INSTANCE given one evidence row."""
    x = torch.tensor(list(itertools.product(range(N_STATES), repeat=N_SITES)))
    p = model.chain.log_prob(x, torch.full((len(x),), INSTANCE)).exp()
    p = p * ((sites == N_STATES) | (x == sites)).all(1)
    p = p / p.sum()
    marg = torch.stack([torch.stack([p[x[:, i] == a].sum() for a in range(N_STATES)]) for i in range(N_SITES)])
    mi = torch.zeros(N_SITES, N_SITES, dtype=torch.float64)
    for i, j in itertools.permutations(range(N_SITES), 2):
        joint = torch.zeros(N_STATES, N_STATES, dtype=torch.float64)
        joint.index_put_((x[:, i], x[:, j]), p, accumulate=True)
        outer = joint.sum(1, keepdim=True) * joint.sum(0, keepdim=True)
        mi[i, j] = torch.where(joint > 0, joint * (joint / outer.clamp_min(1e-300)).log(), 0.0).sum()
    return marg, mi


def test_chain_conditionals_and_pairwise_mi_equal_enumeration_under_random_evidence(tiny):
    g = torch.Generator().manual_seed(0)
    for _ in range(6):
        sites = torch.where(torch.rand(N_SITES, generator=g) < 0.4,
                            torch.randint(N_STATES, (N_SITES,), generator=g), N_STATES)
        marg, mi = _brute(tiny, sites)
        instance = torch.tensor([INSTANCE])
        assert torch.allclose(tiny.chain.marginals(sites[None], instance)[0], marg, atol=1e-12)
        assert torch.allclose(tiny.chain.pair_mi(sites[None], instance)[0], mi, atol=1e-12)


def test_chain_joint_entropy_and_sampling_equal_enumeration(tiny):
    x = completions(tiny.prompts(torch.tensor([INSTANCE]))[0], N_STATES)
    log_p = tiny.log_prob(x)
    assert abs(float(log_p.exp().sum()) - 1) < 1e-12
    entropy = float(tiny.chain.entropy(torch.tensor([INSTANCE]))[0])
    assert entropy == pytest.approx(float(-(log_p.exp() * log_p).sum()), abs=1e-12)
    n = 20_000
    draws = tiny.chain.sample(torch.full((n,), INSTANCE), torch.Generator().manual_seed(1))
    code = (draws * N_STATES ** torch.arange(N_SITES - 1, -1, -1)).sum(1)  # lexicographic, as completions
    _assert_frequencies(torch.bincount(code, minlength=len(x)).double(), log_p.exp())


def _assert_frequencies(counts: torch.Tensor, probs: torch.Tensor) -> None:
    """Pearson's χ² of ``counts`` against ``probs`` within 6 sd of its mean (df = outcomes − 1)."""
    n, live = counts.sum(), probs > 1e-9
    chi2 = float((((counts - n * probs) ** 2)[live] / (n * probs[live])).sum())
    df = int(live.sum()) - 1
    assert chi2 < df + 6 * math.sqrt(2 * df), (chi2, df)
    assert float(counts[~live].sum()) == 0


def _tree(model: ChainBackbone, prompt: torch.Tensor, sampler, pairwise_fn) -> dict[tuple, float]:
    """The sampler's output distribution by enumerating its branching process: at every reachable state
    the project's ``select`` picks the positions (one row, its own forward pass), every joint value of
    them branches with the product of their marginals."""
    out: dict[tuple, float] = {}

    def walk(tokens: torch.Tensor, log_q: float, step: int) -> None:
        masked = tokens == model.mask_id
        if not masked.any():
            out[tuple(tokens.tolist())] = out.get(tuple(tokens.tolist()), 0.0) + math.exp(log_q)
            return
        o = model(tokens[None])
        pairwise = pairwise_fn(o, masked[None], tokens[None]) if sampler.uses_pairwise else None
        chosen = (sampler.select(StepView.from_logits(o.logits, masked[None], pairwise, step))[0] & masked).nonzero()[:, 0]
        logp = torch.log_softmax(o.logits[0].double(), -1)
        for values in itertools.product(range(N_STATES), repeat=len(chosen)):
            nxt = tokens.clone()
            nxt[chosen] = torch.tensor(values)
            walk(nxt, log_q + float(logp[chosen, torch.tensor(values)].sum()), step + 1)

    walk(prompt.clone(), 0.0, 0)
    return out


def _rules(model: ChainBackbone):
    return {"eb": (EntropyBounded(gamma=1.0), None), "naive": (NaiveTopK(k=2), None),
            "mi-exact": (OracleMI(1.5, 1.0, "skip", False), exact_pairwise_fn(model)),
            "mi-noisy": (MIGuided(1.5, 1.0, "skip", False), noisy_pairwise_fn(model, sigma=0.2, seed=3)),
            "sequential": (Sequential(), None)}


@pytest.mark.parametrize("rule", ["eb", "naive", "mi-exact", "mi-noisy", "sequential"])
def test_exact_kl_by_path_replay_equals_the_enumerated_sampler_distribution(tiny, rule):
    sampler, pairwise_fn = _rules(tiny)[rule]
    prompt = tiny.prompts(torch.tensor([INSTANCE]))[0]
    tree = _tree(tiny, prompt, sampler, pairwise_fn)
    x = completions(prompt, N_STATES)
    q_tree = torch.tensor([tree.get(tuple(row.tolist()), 0.0) for row in x], dtype=torch.float64)
    assert float(q_tree.sum()) == pytest.approx(1.0, abs=1e-12)
    assert torch.allclose(replay(tiny, prompt.expand_as(x), x, sampler, pairwise_fn).log_q.exp(), q_tree, atol=1e-12)
    log_p = tiny.log_prob(x)
    exact = enumerate_kl(tiny, prompt, sampler, pairwise_fn)
    assert exact.q_total == pytest.approx(1.0, abs=1e-12)
    assert exact.kl_pq == pytest.approx(float((log_p.exp() * (log_p - q_tree.log())).sum()), abs=1e-12)
    assert exact.kl_qp == pytest.approx(float((q_tree * (q_tree.log() - log_p)).sum()), abs=1e-12)
    if rule == "sequential":  # a perfect model decoded one site per pass: q = p (up to float32 logits)
        assert abs(exact.kl_pq) < 1e-6 and abs(exact.kl_qp) < 1e-6 and exact.passes == pytest.approx(N_SITES)
    else:
        assert exact.kl_pq > 1e-3 and exact.passes < N_SITES


@pytest.mark.parametrize("rule", ["eb", "mi-noisy"])
def test_the_project_decode_draws_from_the_replayed_q(tiny, rule):
    sampler, pairwise_fn = _rules(tiny)[rule]
    prompt = tiny.prompts(torch.tensor([INSTANCE]))[0]
    n = 20_000
    drawn = draw_decodes(tiny, prompt.expand(n, -1), sampler, torch.Generator().manual_seed(2), pairwise_fn)
    x = completions(prompt, N_STATES)
    rep = replay(tiny, prompt.expand_as(x), x, sampler, pairwise_fn)
    code = (drawn.tokens[:, 1:] * N_STATES ** torch.arange(N_SITES - 1, -1, -1)).sum(1)
    _assert_frequencies(torch.bincount(code, minlength=len(x)).double(), rep.log_q.exp())
    assert torch.equal(rep.passes[code], drawn.passes)  # each draw's path is the replayed one


def test_noisy_mi_is_a_fixed_symmetric_function_of_the_context_at_the_heads_pearson(tiny):
    g = torch.Generator().manual_seed(4)
    contexts = random_contexts(tiny, torch.tensor([0, 1] * 100), g)
    fn = noisy_pairwise_fn(tiny, sigma=0.1, seed=5)
    first, again = fn(None, None, contexts), fn(None, None, contexts.flip(0)).flip(0)
    assert torch.equal(first, again) and torch.equal(first, first.transpose(1, 2)) and (first >= 0).all()
    assert not torch.equal(first, noisy_pairwise_fn(tiny, sigma=0.1, seed=6)(None, None, contexts))
    sigma, r = calibrate_sigma(tiny, contexts, seed=5, target=0.85)
    assert sigma > 0 and r == pytest.approx(0.85, abs=1e-3)


def test_regimes_are_what_they_say():
    pairs = build_chain(REGIMES["sparse-pairs"], 3)
    empty, instance = pairs.masked(3), torch.arange(3)
    mi = pairs.pair_mi(empty, instance)
    coupled = {(i, i + 1) for i in range(0, pairs.n_sites - 1, REGIMES["sparse-pairs"].pair_every)}
    i, j = torch.triu_indices(pairs.n_sites, pairs.n_sites, 1)
    strong = {(int(a), int(b)) for a, b in zip(i, j) if (mi[:, a, b] > 0.1).all()}
    assert strong == coupled and float(mi.max()) < 1.2  # only the coupled pairs depend on each other
    hard = REGIMES["hard"]
    assert 0.999 < float(valid_mass(hard, build_chain(hard, 2), torch.arange(2)).min()) < 1.0


def _tiny_study(seed: int = 0):
    regime = dataclasses.replace(REGIMES["hard"], n_sites=8)
    settings = StudySettings(divisors=(2,), n_calibration=16, n_test=24, n_noise_contexts=16, n_bootstrap=50, seed=seed)
    return run_study([regime], settings, log=lambda *_: None)


def test_the_study_is_deterministic_and_its_tables_render(tmp_path):
    first, again = _tiny_study(), _tiny_study()
    assert first == again
    assert _tiny_study(seed=1) != first
    rules = {(r["rule"], r["divisor"]) for r in first.runs}
    assert rules == {("sequential", 1), ("naive", 2), ("eb", 2), ("mi-exact", 2), ("mi-noisy", 2)}
    assert all(abs(r["passes"] - r["target"]) <= 0.03 * r["target"] for r in first.runs)
    assert [r for r in first.runs if r["rule"] == "sequential"][0]["kl_pq"] == pytest.approx(0.0, abs=1e-6)
    write_tables(first, tmp_path)
    table = render_table(tmp_path / "map.csv")
    lines = table.splitlines()
    assert lines[0].startswith("| regime | budget | rule |") and len(lines) == 2 + len(first.map)
    row = read_table(tmp_path / "map.csv")[0]
    assert f"{row['diff']} [{row['diff_lo']}, {row['diff_hi']}]" in lines[2]
    assert len(render_table(tmp_path / "runs.csv").splitlines()) == 2 + len(first.runs)


def test_the_testbed_verb_writes_tables_figures_and_provenance(tmp_path, monkeypatch):
    import json

    from mdm_mi.cli import main
    from mdm_mi.testbed import jobs as testbed_jobs

    monkeypatch.setitem(testbed_jobs.REGIMES, "tiny", dataclasses.replace(REGIMES["sparse-pairs"], name="tiny", n_sites=8))
    code = main(["testbed", "--out-dir", str(tmp_path / "data"), "--figure-dir", str(tmp_path / "fig"), "--regimes", "tiny",
                 "--divisors", "2", "--n-calibration", "8", "--n-test", "8", "--n-noise-contexts", "8"])
    assert code == 0
    assert {p.name for p in (tmp_path / "data").iterdir()} == {"regimes.csv", "runs.csv", "map.csv", "provenance.json"}
    assert {p.name for p in (tmp_path / "fig").iterdir()} == {"map.png", "curves.png"}
    record = json.loads((tmp_path / "data" / "provenance.json").read_text())
    assert {"command", "git_commit", "machine", "date", "cpu_seconds", "settings"} <= set(record)
    assert record["settings"]["n_test"] == 8 and record["regimes"] == ["tiny"]
    assert main(["testbed", "--out-dir", str(tmp_path / "x"), "--regimes", "nope"]) == 2


def test_the_docs_page_is_rendered_from_its_committed_data():
    """docs/testbed.md: every ``<!-- render: testbed FILE -->`` block is ``render_table(FILE)`` exactly, and
    every decimal number of the prose is written in one of docs/data/testbed's files, but those bound to
    their own field by a ``<!-- value: ... -->`` marker (rounded there; tests/test_docs_data.py checks them
    against that field)."""
    import re
    from pathlib import Path

    repo = Path(__file__).resolve().parents[1]
    page = (repo / "docs" / "testbed.md").read_text()
    blocks = re.findall(r"<!-- render: testbed (\S+) -->\n(.*?)<!-- /render -->", page, flags=re.S)
    assert {Path(f).name for f, _ in blocks} == {"regimes.csv", "map.csv", "runs.csv"}
    for file, body in blocks:
        assert body == render_table(repo / file), file
    prose = re.sub(r"<!-- render: .*? -->.*?<!-- /render -->", "", page, flags=re.S)
    folders = [repo / "docs" / "data" / d for d in ("testbed", "testbed-remask")]  # the newer rules' section too
    data = " ".join(p.read_text() for folder in folders for p in folder.iterdir())
    data += (repo / "src" / "mdm_mi" / "testbed" / "remask_study.py").read_text()  # its settings (τout, κ, KL)
    written = set(re.findall(r"\d+\.\d+", data))
    unbound = re.findall(r"(?<![\w.])\d+\.\d+(?![\d%]*<!-- value:)", prose)
    assert [n for n in unbound if n not in written] == []
