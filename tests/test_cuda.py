"""The CUDA paths on a real GPU: the same models, labeller, head and samplers as on the CPU.

Every test here is skipped on a machine without a GPU (CI has none); `scripts/gpu_check.sh` runs
them on a GPU machine. They check that results computed on ``cuda`` agree with the CPU's (within
float32 kernel differences), that the decoding properties hold on the device (clues kept, no mask
left, same seed → same output), that bf16 ESM-C and bf16-autocast training stay close to fp32, and
that ``auto`` resolves to the GPU.
"""

from __future__ import annotations

import dataclasses
import json

import pytest
import torch

from mdm_mi.cli import main

from mdm_mi.core.samplers import decode
from mdm_mi.infra.checkpoint import save_checkpoint
from mdm_mi.infra.flags import Decoding
from mdm_mi.infra.runtime import resolve_device
from mdm_mi.mi.guided import head_pairwise_fn, oracle_pairwise_fn
from mdm_mi.mi.head import HeadConfig, MIHead
from mdm_mi.mi.probe import certified_mi, exact_mi
from mdm_mi.sampling.registry import build_sampler
from mdm_mi.sudoku.grid import MASK_ID
from mdm_mi.sudoku.model import DOMAIN, ModelConfig, SudokuMDM, load_sudoku_model
from mdm_mi.sudoku.train import TrainConfig, train

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

CUDA = "cuda:0"
SMALL = ModelConfig(d_model=64, n_layers=2, n_heads=4, ff_mult=2, dropout=0.0, hidden_layer=-1)
HEAD = HeadConfig(hidden=32, heads=4, rank=8, unary=True, distance_buckets=4)


@pytest.fixture(scope="module")
def model_pair():
    """The same random Sudoku MDM on the CPU and on the GPU (fp32, TF32 off)."""
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.manual_seed(0)
    cpu = SudokuMDM(SMALL).eval()
    gpu = SudokuMDM(SMALL).eval()
    gpu.load_state_dict(cpu.state_dict())
    return cpu, gpu.to(CUDA)


@pytest.fixture(scope="module")
def puzzles(easy_puzzles):
    """8 real easy puzzles and their solutions, ``(8, 81)`` long tensors."""
    p, s = easy_puzzles
    return torch.as_tensor(p[:8]), torch.as_tensor(s[:8])


def test_auto_device_is_the_gpu():
    assert resolve_device("auto").startswith("cuda")
    assert resolve_device("cuda:0") == "cuda:0"


def test_backbone_forward_matches_cpu(model_pair, puzzles):
    cpu, gpu = model_pair
    tokens = puzzles[0]
    with torch.inference_mode():
        a, b = cpu(tokens), gpu(tokens.to(CUDA))
    assert b.logits.device.type == "cuda" and b.hidden.shape == a.hidden.shape
    torch.testing.assert_close(b.logits.cpu(), a.logits, atol=1e-4, rtol=1e-4)
    torch.testing.assert_close(b.hidden.cpu(), a.hidden, atol=1e-4, rtol=1e-4)


def _context(solution: torch.Tensor, n_masked: int) -> torch.Tensor:
    tokens = solution.clone()
    tokens[torch.randperm(81, generator=torch.Generator().manual_seed(n_masked))[:n_masked]] = MASK_ID
    return tokens


def test_exact_labels_match_cpu(model_pair, puzzles):
    cpu, gpu = model_pair
    tokens = _context(puzzles[1][0], 12)
    with torch.inference_mode():
        a = exact_mi(cpu, tokens, batch_size=64)
        b = exact_mi(gpu, tokens.to(CUDA), batch_size=64)
    assert a.passes == b.passes == 1 + 12 * 9
    torch.testing.assert_close(b.label.cpu(), a.label, atol=2e-5, rtol=0)
    torch.testing.assert_close(b.label, b.label.T)


def test_certified_bound_holds_on_gpu(model_pair, puzzles):
    _, gpu = model_pair
    tokens = _context(puzzles[1][2], 20).to(CUDA)
    with torch.inference_mode():
        exact = exact_mi(gpu, tokens, batch_size=128)
        cert = certified_mi(gpu, tokens, tol=1e-3, batch_size=128)
    err = (cert.label - exact.label).abs()
    assert cert.passes <= exact.passes
    assert float(cert.bound.max()) <= 1e-3
    assert bool((err <= cert.bound + 1e-6).all()), float((err - cert.bound).max())


def test_head_matches_cpu_and_is_symmetric(model_pair, puzzles):
    cpu, gpu = model_pair
    torch.manual_seed(1)
    head_cpu = MIHead(SMALL.d_model, HEAD).eval()
    head_gpu = MIHead(SMALL.d_model, HEAD).eval()
    head_gpu.load_state_dict(head_cpu.state_dict())
    head_gpu.to(CUDA)
    tokens = puzzles[0]
    masked = tokens == MASK_ID
    with torch.inference_mode():
        a = head_cpu(cpu(tokens).hidden, masked)
        b = head_gpu(gpu(tokens.to(CUDA)).hidden, masked.to(CUDA))
    torch.testing.assert_close(b, b.transpose(1, 2))
    assert bool((b >= 0).all())
    torch.testing.assert_close(b.cpu(), a, atol=1e-4, rtol=1e-3)


SAMPLERS = [
    ("sequential", {"order": "entropy"}),
    ("naive", {"k": 4}),
    ("eb", {"gamma": 0.3}),
    ("mi", {"gamma": 0.3, "lam": 1.0, "on_reject": "skip", "charge_first": False}),
]


@pytest.mark.parametrize("name,params", SAMPLERS, ids=[s for s, _ in SAMPLERS])
def test_samplers_on_gpu_keep_clues_and_repeat(model_pair, puzzles, name, params):
    _, gpu = model_pair
    torch.manual_seed(2)
    pairwise = head_pairwise_fn(MIHead(SMALL.d_model, HEAD).to(CUDA)) if name == "mi" else None
    tokens = puzzles[0].to(CUDA)
    runs = []
    for _ in range(2):
        gen = torch.Generator(device=CUDA).manual_seed(7)
        with torch.inference_mode():
            runs.append(decode(gpu, tokens, build_sampler(name, **params), gen, decoding=Decoding(temperature=1.0),
                               pairwise_fn=pairwise))
    out = runs[0]
    clues = tokens != MASK_ID
    assert out.tokens.device.type == "cuda"
    assert torch.equal(out.tokens[clues], tokens[clues])
    assert not bool((out.tokens == MASK_ID).any())
    assert torch.equal(runs[0].tokens, runs[1].tokens) and torch.equal(runs[0].passes, runs[1].passes)
    if name == "sequential":
        assert torch.equal(out.passes.cpu(), (tokens == MASK_ID).sum(1).cpu())


def test_oracle_sampler_on_gpu(model_pair, puzzles):
    _, gpu = model_pair
    tokens = puzzles[1][:2].clone()
    tokens[:, :6] = MASK_ID  # a few blanks: the oracle probes every one at every pass
    tokens = tokens.to(CUDA)
    with torch.inference_mode():
        out = decode(gpu, tokens, build_sampler("mi-oracle", gamma=0.3, lam=1.0, on_reject="skip",
                                                charge_first=False),
                     torch.Generator(device=CUDA).manual_seed(0), pairwise_fn=oracle_pairwise_fn(gpu))
    assert not bool((out.tokens == MASK_ID).any())


def test_bf16_training_on_gpu_learns_and_saves(tmp_path, puzzles):
    solutions = puzzles[1].repeat(16, 1).numpy()
    cfg = TrainConfig(steps=60, batch_size=32, lr=3e-3, warmup=5, weight_decay=0.0, t_min=0.05,
                      t_max=1.0, loss_weight="none", augment=True, grad_clip=1.0, seed=0,
                      log_every=20, compile=False, ema=0.0, save_every=0, snapshot_every=0)
    model, history = train(solutions, SMALL, cfg, CUDA, log=lambda s: None)
    assert all(torch.isfinite(torch.tensor(r["loss"])) for r in history)
    assert history[-1]["loss"] < history[0]["loss"]
    assert next(model.parameters()).dtype == torch.float32  # bf16 is autocast only
    save_checkpoint(model, tmp_path / "m", {"domain": DOMAIN, "model": dataclasses.asdict(SMALL)})
    loaded, _ = load_sudoku_model(tmp_path / "m", device="cpu")
    assert next(loaded.parameters()).device.type == "cpu"


def test_evaluate_verb_on_gpu(tmp_path, tiny_checkpoint, easy_csv):
    out = tmp_path / "summary.json"
    argv = ["sudoku-evaluate", "--model", str(tiny_checkpoint), "--puzzles", str(easy_csv), "--out", str(out),
            "--per-puzzle", str(tmp_path / "per.csv"), "--sampler", "eb", "--gamma", "0.3",
            "--device", "auto", "--threads", "1", "--batch-size", "2"]
    assert main(argv) == 0
    summary = json.loads(out.read_text())
    assert summary["sampler"] == "eb" and summary["levels"]["all"]


@pytest.fixture(scope="module")
def tiny_esmc_pair():
    """A tiny random ESM-C on the CPU (fp32) and on the GPU under bf16 autocast."""
    ESMC = pytest.importorskip("esm.models.esmc").ESMC
    from mdm_mi.protein.esmc import ESMCBackbone, esmc_tokenizer

    torch.manual_seed(0)
    dims = {"d_model": 64, "n_heads": 4, "n_layers": 2}
    cpu = ESMC(tokenizer=esmc_tokenizer(), use_flash_attn=False, **dims).eval()
    gpu = ESMC(tokenizer=esmc_tokenizer(), use_flash_attn=False, **dims).eval()
    gpu.load_state_dict(cpu.state_dict())
    return ESMCBackbone(cpu).eval(), ESMCBackbone(gpu, bf16=True).to(CUDA).eval()


def test_esmc_bf16_on_gpu_is_close_to_fp32(tiny_esmc_pair):
    cpu, gpu = tiny_esmc_pair
    tokens = cpu.encode(["MKTAYIAKQRQISFVKSHFSRQ", "ACDEFGHIKLMNPQRSTVWYAC"])
    tokens[:, 3:9] = cpu.mask_id
    with torch.inference_mode():
        a, b = cpu(tokens), gpu(tokens.to(CUDA))
    assert b.logits.dtype == torch.float32 and b.hidden.dtype == torch.float32
    pa, pb = a.logits.softmax(-1), b.logits.cpu().softmax(-1)
    assert float((pa - pb).abs().max()) < 0.05  # bf16 keeps ~3 significant digits


def test_protein_generation_on_gpu(tiny_esmc_pair):
    from mdm_mi.protein.generate import generate

    _, gpu = tiny_esmc_pair
    runs = []
    for _ in range(2):
        with torch.inference_mode():
            runs.append(generate(gpu, [12, 20, 15], build_sampler("naive", k=4),
                                 3, decoding=Decoding(temperature=1.0)))
    seqs, passes = runs[0]
    assert [len(s) for s in seqs] == [12, 20, 15]
    assert seqs == runs[1][0] and (passes == runs[1][1]).all()
    assert list(passes) == [3, 5, 4]
