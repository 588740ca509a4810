"""ESM-C adapter with a tiny random ESM-C (no real weights needed), its loader's refusals, the
download's offline error, and FASTA I/O on the bundled UniRef50 sample."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest
import torch

from mdm_mi.core.backbone import Backbone

from mdm_mi.core.samplers import decode
from mdm_mi.infra.checkpoint import CheckpointError
from mdm_mi.infra.errors import InputError
from mdm_mi.infra.fasta import read_fasta, write_fasta
from mdm_mi.infra.flags import Decoding
from mdm_mi.protein import esmc as esmc_mod
from mdm_mi.protein.esmc import AMINO_ACIDS, ESMCBackbone, download_esmc_300m, esmc_tokenizer, load_esmc
from mdm_mi.protein.sequences import sample_reference, validate_sequence
from mdm_mi.sampling.registry import build_sampler

REPO = Path(__file__).resolve().parents[1]
UNIREF = REPO / "resources" / "data" / "protein" / "uniref50_len50-100.fasta"
TINY = {"d_model": 32, "n_heads": 2, "n_layers": 2}


@pytest.fixture(scope="module")
def tiny_esmc():
    """A random ESM-C with d_model 32 and 2 layers (tests using it skip when esm is not installed)."""
    ESMC = pytest.importorskip("esm.models.esmc").ESMC

    torch.manual_seed(0)
    return ESMC(tokenizer=esmc_tokenizer(), use_flash_attn=False, **TINY).eval()


@pytest.fixture(scope="module")
def tiny_weights(tmp_path_factory, tiny_esmc) -> Path:
    """The tiny model's state dict saved like the real weights file (torch.save of a state dict)."""
    path = tmp_path_factory.mktemp("esmc") / "esmc_tiny.pth"
    torch.save(tiny_esmc.state_dict(), path)
    return path


@pytest.fixture(scope="module")
def backbone(tiny_weights) -> ESMCBackbone:
    return ESMCBackbone(load_esmc(tiny_weights, **TINY), hidden_layer=-1).eval()


def test_load_gives_identical_logits(tiny_esmc, backbone):
    tokens = backbone.encode(["MKTAYIAKQR", "ACDEFGHIKL"])
    with torch.inference_mode():
        want = tiny_esmc(sequence_tokens=tokens)
        got = backbone.model(sequence_tokens=tokens)
    assert torch.equal(want.sequence_logits, got.sequence_logits)
    assert torch.equal(want.hidden_states, got.hidden_states)


def test_backbone_shapes_and_vocab(backbone, tiny_esmc):
    tok = tiny_esmc.tokenizer
    assert isinstance(backbone, Backbone)
    assert backbone.vocab_size == 20 and backbone.hidden_dim == 32
    assert backbone.mask_id == tok.mask_token_id
    assert tok.convert_ids_to_tokens(backbone.vocab_token_ids.tolist()) == list(AMINO_ACIDS)
    tokens = torch.stack([backbone.masked_sequence(12)] * 3)
    assert tokens.shape == (3, 14)
    assert tokens[0, 0] == tok.cls_token_id and tokens[0, -1] == tok.eos_token_id
    assert (tokens[:, 1:-1] == tok.mask_token_id).all()
    with torch.inference_mode():
        out = backbone(tokens)
        full = tiny_esmc(sequence_tokens=tokens)
    assert out.logits.shape == (3, 14, 20) and out.hidden.shape == (3, 14, 32)
    assert out.logits.dtype == torch.float32 and out.hidden.dtype == torch.float32
    # the logits are ESM-C's sequence logits gathered at the amino-acid ids; hidden is the last block
    assert torch.equal(out.logits, full.sequence_logits[..., backbone.vocab_token_ids])
    assert torch.equal(out.hidden, full.hidden_states[-1])


def test_hidden_layer_selection(tiny_esmc):
    tokens = torch.stack([ESMCBackbone(tiny_esmc).masked_sequence(5)])
    with torch.inference_mode():
        full = tiny_esmc(sequence_tokens=tokens).hidden_states  # (n_layers, B, N, D)
        for layer, index in [(0, 0), (1, 1), (-1, 1), (-2, 0)]:
            assert torch.equal(ESMCBackbone(tiny_esmc, hidden_layer=layer)(tokens).hidden, full[index])
    for bad in (2, -3):
        with pytest.raises(InputError, match="hidden_layer"):
            ESMCBackbone(tiny_esmc, hidden_layer=bad)


def test_hidden_layer_none_reads_the_output_after_the_final_norm(tiny_esmc):
    tokens = torch.stack([ESMCBackbone(tiny_esmc).masked_sequence(5)])
    with torch.inference_mode():
        last = tiny_esmc(sequence_tokens=tokens).hidden_states[-1]
        out = ESMCBackbone(tiny_esmc, hidden_layer=None)(tokens).hidden
        normed = tiny_esmc.transformer.norm(last)
    assert torch.allclose(out, normed, atol=1e-6)  # the metrics' embedding
    assert not torch.allclose(out, last, atol=1e-3)  # not the pre-norm residual stream


def test_encode_decode_and_padding(backbone):
    seqs = ["MKT_AY", "ACDEFGHIKLMNPQRSTVWY"]
    tokens = backbone.encode(seqs)
    assert tokens.shape == (2, 22)
    assert tokens[0, 8:].eq(backbone.pad_id).all() and tokens[0, 7] == backbone.eos_id
    assert tokens[0, 4] == backbone.mask_id
    assert backbone.decode_tokens(tokens) == seqs
    with pytest.raises(InputError, match="'B'"):
        backbone.encode(["ACB"])
    # right padding does not change the real positions' outputs
    with torch.inference_mode():
        alone = backbone(backbone.encode(seqs[:1]))
        padded = backbone(tokens)
    torch.testing.assert_close(padded.logits[0, :8], alone.logits[0], atol=1e-5, rtol=1e-5)
    torch.testing.assert_close(padded.hidden[0, :8], alone.hidden[0], atol=1e-5, rtol=1e-5)


def _generate(backbone, seed: int, length: int = 16, batch: int = 2) -> torch.Tensor:
    tokens = torch.stack([backbone.masked_sequence(length)] * batch)
    gen = torch.Generator().manual_seed(seed)
    return decode(backbone, tokens, build_sampler("naive", k=4), gen, decoding=Decoding(temperature=1.0)).tokens


def test_naive_decode_keeps_bos_eos(backbone):
    out = _generate(backbone, seed=3)
    assert out.shape == (2, 18)
    assert (out[:, 0] == backbone.bos_id).all() and (out[:, -1] == backbone.eos_id).all()
    assert not (out == backbone.mask_id).any()
    for seq in backbone.decode_tokens(out):
        assert len(seq) == 16 and set(seq) <= set(AMINO_ACIDS)
    assert torch.equal(out, _generate(backbone, seed=3))


def test_download_offline_is_one_line_input_error(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(InputError) as info:
        download_esmc_300m(tmp_path / "esmc")
    msg = str(info.value)
    assert "\n" not in msg and "esmc_300m_2024_12_v0.pth" in msg and "protein.esmc_weights" in msg


def test_download_failure_and_success(tmp_path, monkeypatch):
    import socket

    huggingface_hub = pytest.importorskip("huggingface_hub")

    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)

    def fail(**kwargs):
        raise ConnectionError("no route to host\nsecond line")

    def no_dns(*args, **kwargs):
        raise socket.gaierror(-2, "Name or service not known")

    # no name resolution: refused at once, before the hub client would retry for ~25 s
    monkeypatch.setattr(socket, "getaddrinfo", no_dns)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fail)
    with pytest.raises(InputError, match="gaierror"):
        download_esmc_300m(tmp_path / "a")

    monkeypatch.setattr(socket, "getaddrinfo", lambda *a, **k: [])
    with pytest.raises(InputError) as info:
        download_esmc_300m(tmp_path / "a")
    assert "\n" not in str(info.value)

    def fake(repo_id, filename, local_dir):
        assert (repo_id, filename) == (esmc_mod.ESMC_300M_REPO, esmc_mod.ESMC_300M_FILE)
        out = Path(local_dir) / filename
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(b"weights")
        return str(out)

    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake)
    got = download_esmc_300m(tmp_path / "b")
    assert got == tmp_path / "b" / "esmc_300m_2024_12_v0.pth" and got.read_bytes() == b"weights"
    assert not (tmp_path / "b" / ".esmc-download").exists()


def test_corrupt_and_truncated_weights_refused(tmp_path, tiny_weights):
    data = tiny_weights.read_bytes()
    truncated = tmp_path / "truncated.pth"
    truncated.write_bytes(data[: len(data) // 2])
    garbage = tmp_path / "garbage.pth"
    garbage.write_bytes(os.urandom(1000))
    empty = tmp_path / "empty.pth"
    empty.write_bytes(b"")
    for path in (truncated, garbage, empty):
        with pytest.raises(CheckpointError, match="corrupt") as info:
            load_esmc(path, **TINY)
        assert "\n" not in str(info.value) and str(path) in str(info.value)
    with pytest.raises(CheckpointError, match="missing"):
        load_esmc(tmp_path / "missing.pth", **TINY)


def test_wrong_shapes_refused(tiny_weights):
    with pytest.raises(CheckpointError, match="wrong shape") as info:
        load_esmc(tiny_weights, d_model=64, n_heads=2, n_layers=2)
    assert "\n" not in str(info.value)
    with pytest.raises(CheckpointError, match="missing"):
        load_esmc(tiny_weights, d_model=32, n_heads=2, n_layers=3)


class Payload:
    """An arbitrary object: unpickling it would run ``os.system``-style code in a real attack."""

    def __reduce__(self):
        return (print, ("unpickled!",))


def test_arbitrary_pickle_refused(tmp_path, capsys):
    path = tmp_path / "evil.pth"
    torch.save({"embed.weight": Payload()}, path)
    with pytest.raises(CheckpointError, match="refused") as info:
        load_esmc(path, **TINY)
    assert "\n" not in str(info.value)
    assert "unpickled!" not in capsys.readouterr().out
    plain = tmp_path / "plain.pkl"
    with plain.open("wb") as fh:
        pickle.dump(Payload(), fh, protocol=2)
    with pytest.raises(CheckpointError):
        load_esmc(plain, **TINY)
    assert "unpickled!" not in capsys.readouterr().out


def test_safetensors_weights(tmp_path, tiny_esmc, tiny_weights):
    from safetensors.torch import save_file

    path = tmp_path / "tiny.safetensors"
    save_file({k: v.contiguous() for k, v in tiny_esmc.state_dict().items()}, str(path))
    model = load_esmc(path, **TINY)
    tokens = ESMCBackbone(model).masked_sequence(6).unsqueeze(0)
    with torch.inference_mode():
        assert torch.equal(model(sequence_tokens=tokens).sequence_logits, tiny_esmc(sequence_tokens=tokens).sequence_logits)
    path.write_bytes(path.read_bytes()[:100])
    with pytest.raises(CheckpointError, match="corrupt"):
        load_esmc(path, **TINY)


# ------------------------------------------------------------------------------------------- FASTA


def test_read_bundled_fasta():
    records = read_fasta(UNIREF)
    assert len(records) == 585
    header, seq = records[0]
    assert header.startswith("UniRef50_") and not header.startswith(">")
    for _, seq in records:
        validate_sequence(seq, min_len=50, max_len=100)


def test_fasta_roundtrip_and_wrap(tmp_path):
    records = read_fasta(UNIREF)[:5]
    for width in (None, 7):
        out = tmp_path / f"w{width}.fasta"
        write_fasta(out, records, width=width)
        assert read_fasta(out) == records
    assert not list(tmp_path.glob(".*.tmp"))


def test_fasta_errors(tmp_path):
    with pytest.raises(InputError, match="not found"):
        read_fasta(tmp_path / "nope.fasta")
    bad = tmp_path / "bad.fasta"
    bad.write_text("MKT\n>x\nMK\n")
    with pytest.raises(InputError, match="line 1"):
        read_fasta(bad)
    bad.write_text(">x\n>y\nMK\n")
    with pytest.raises(InputError, match="'x'"):
        read_fasta(bad)
    bad.write_text("\n")
    with pytest.raises(InputError, match="no records"):
        read_fasta(bad)


def test_validate_sequence():
    assert validate_sequence("MKT") == "MKT"
    with pytest.raises(InputError, match=r"'B', 'X'.*position 3"):
        validate_sequence("MKXTB")
    with pytest.raises(InputError, match="length 3, shorter than the minimum 50"):
        validate_sequence("MKT", min_len=50)
    with pytest.raises(InputError, match="longer than the maximum 2"):
        validate_sequence("MKT", max_len=2)


def test_sample_reference():
    records = read_fasta(UNIREF)
    a = sample_reference(records, 500, seed=0)
    assert a == sample_reference(records, 500, seed=0)
    assert len({h for h, _ in a}) == 500
    assert a[:10] == sample_reference(records, 10, seed=0)
    assert a != sample_reference(records, 500, seed=1)
    with pytest.raises(InputError, match="only 585"):
        sample_reference(records, 586, seed=0)


def test_ensure_esmc_300m_prefers_local_files(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    given = tmp_path / "mine.pth"
    with pytest.raises(InputError, match="protein.esmc_weights"):
        esmc_mod.ensure_esmc_300m(tmp_path, weights=given)
    given.write_bytes(b"x")
    assert esmc_mod.ensure_esmc_300m(tmp_path, weights=given) == given
    with pytest.raises(InputError, match="HF_HUB_OFFLINE"):
        esmc_mod.ensure_esmc_300m(tmp_path / "esmc")
    (tmp_path / "esmc").mkdir()
    local = tmp_path / "esmc" / "esmc_300m_2024_12_v0.pth"
    local.write_bytes(b"x")
    assert esmc_mod.ensure_esmc_300m(tmp_path / "esmc") == local


def test_download_behind_an_https_proxy_skips_the_dns_check(tmp_path, monkeypatch):
    import socket

    huggingface_hub = pytest.importorskip("huggingface_hub")
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    for key in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(key, raising=False)

    def no_dns(*args, **kwargs):
        raise socket.gaierror(-2, "Name or service not known")

    def fake(repo_id, filename, local_dir):
        out = Path(local_dir) / filename
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(b"weights")
        return str(out)

    monkeypatch.setattr(socket, "getaddrinfo", no_dns)
    monkeypatch.setattr(huggingface_hub, "hf_hub_download", fake)
    with pytest.raises(InputError, match="gaierror"):  # no proxy: local DNS is the test
        download_esmc_300m(tmp_path / "a")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    assert download_esmc_300m(tmp_path / "b").read_bytes() == b"weights"  # the proxy resolves the name


def test_captured_attention_is_the_weights_the_last_block_uses(backbone):
    """capture_attention recomputes ESM-C's fused attention weights: weights × V through out_proj gives
    the block's own attention output; one (B, N, N) matrix per forward, rows summing to 1, pads unseen."""
    from mdm_mi.protein.esmc import head_weights

    attn = backbone.model.transformer.blocks[-1].attn
    tokens = backbone.encode(["ACD_FG", "AC_"])
    with backbone.capture_attention() as seen:
        backbone(tokens)
    backbone(tokens)
    assert len(seen) == 1 and seen[0].shape == (2, tokens.shape[1], tokens.shape[1])
    inputs = {}
    hook = attn.register_forward_hook(lambda m, args, out: inputs.update(args=args, out=out))
    backbone(tokens)
    hook.remove()
    x, seq_id = inputs["args"]
    w = head_weights(attn, x, seq_id)  # (B, H, N, N)
    v = torch.chunk(attn.layernorm_qkv(x), 3, dim=-1)[2].unflatten(-1, (attn.n_heads, attn.d_head)).transpose(1, 2)
    out = attn.out_proj((w @ v).transpose(1, 2).flatten(-2))
    assert torch.allclose(out, inputs["out"], atol=1e-5)
    assert torch.allclose(seen[0], w.mean(1), atol=1e-6)
    real = tokens != backbone.pad_id
    assert torch.allclose(seen[0].sum(-1), torch.ones(2, tokens.shape[1]), atol=1e-5)
    assert torch.all(seen[0][1][real[1]][:, ~real[1]] < 1e-6)
