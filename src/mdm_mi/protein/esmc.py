"""ESM-C (EvolutionaryScale) as a :class:`~mdm_mi.core.backbone.Backbone`.

ESM-C is a masked protein language model; read as a masked discrete sequence model, its sequence
logits at masked positions are the per-position marginals the samplers and the MI head use.

    path = ensure_esmc_300m("resources/esmc")              # downloads once; offline → InputError
    backbone = ESMCBackbone(load_esmc(path), hidden_layer=-1)
    tokens = backbone.masked_sequence(60).unsqueeze(0)      # BOS + 60 × mask + EOS
    out = backbone(tokens)                                  # logits (1, 62, 20), hidden (1, 62, 960)

Token ids are the ESM tokenizer's ids: ``<cls>`` (BOS) first, ``<eos>`` last, ``<pad>`` after EOS in
padded batches. None of these is the mask, so a sampler never rewrites them. The logits are the
ESM-C sequence logits gathered at the 20 standard amino acids (V = 20, in the order of
:data:`AMINO_ACIDS`); ``vocab_token_ids`` maps each logit index back to its input id.

Weights are loaded without unpickling arbitrary objects (``torch.load(weights_only=True)`` or
safetensors). The ``esm`` package is imported lazily: it takes seconds to import.
"""

from __future__ import annotations

import contextlib
import logging
import os
import pickle
import shutil
import socket
from pathlib import Path
from typing import TYPE_CHECKING, Sequence
from urllib.parse import urlparse

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file
from torch import nn

from mdm_mi.core.backbone import BackboneOutput
from mdm_mi.infra.checkpoint import CheckpointError
from mdm_mi.infra.errors import InputError
from mdm_mi.infra.fasta import AMINO_ACIDS  # logit index i ↔ AMINO_ACIDS[i]
from mdm_mi.protein.tokens import MASK_CHAR, esmc_tokenizer, protein_tokens  # noqa: F401 (re-exported)

if TYPE_CHECKING:  # pragma: no cover
    from esm.models.esmc import ESMC

# ESM-C 300M, as in esm/pretrained.py (ESMC_300M_202412) and esm/utils/constants/esm3.py (data_root)
ESMC_300M_REPO = "EvolutionaryScale/esmc-300m-2024-12"
ESMC_300M_FILE = "data/weights/esmc_300m_2024_12_v0.pth"
ESMC_300M_WEIGHTS = Path(ESMC_300M_FILE).name
ESMC_300M_DIMS = {"d_model": 960, "n_heads": 15, "n_layers": 30}

_OFFLINE_VALUES = {"1", "ON", "YES", "TRUE"}


# ---------------------------------------------------------------------------------------- download


def _download_help(dest_dir: Path) -> str:
    return (
        f"copy {ESMC_300M_WEIGHTS} (from huggingface.co/{ESMC_300M_REPO}, file {ESMC_300M_FILE}) "
        f"into {dest_dir}/ or set protein.esmc_weights to its path"
    )


def _https_proxy() -> bool:
    """Whether downloads go through a proxy (``HTTPS_PROXY`` / ``ALL_PROXY``, either case)."""
    return any(os.environ.get(k, "").strip() for k in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"))


def download_esmc_300m(dest_dir: str | Path) -> Path:
    """Fetch the ESM-C 300M weights from the Hugging Face Hub into ``dest_dir/esmc_300m_2024_12_v0.pth``.

    Returns the path. Offline (``HF_HUB_OFFLINE`` set), without ``huggingface_hub`` or on any
    failure, raises :class:`InputError` with one line saying what to do. An interrupted download
    resumes from ``dest_dir/.esmc-download`` on the next call.
    """
    dest_dir = Path(dest_dir)
    target = dest_dir / ESMC_300M_WEIGHTS
    # huggingface_hub reads HF_HUB_OFFLINE once at import, so check the live environment here too
    if os.environ.get("HF_HUB_OFFLINE", "").strip().upper() in _OFFLINE_VALUES:
        raise InputError(f"could not download ESM-C 300M weights (HF_HUB_OFFLINE is set): {_download_help(dest_dir)}")
    staging = dest_dir / ".esmc-download"
    hub_log = logging.getLogger("huggingface_hub")
    level = hub_log.level
    try:
        # fail fast without a network: the hub client would retry for ~25 s, logging each retry
        # (not behind an HTTPS proxy: the proxy resolves the name, and local DNS may rightly fail)
        if not _https_proxy():
            host = urlparse(os.environ.get("HF_ENDPOINT") or "https://huggingface.co").hostname or "huggingface.co"
            socket.getaddrinfo(host, 443)
        from huggingface_hub import hf_hub_download  # lazy: ~1 s, needed only to download weights

        dest_dir.mkdir(parents=True, exist_ok=True)
        hub_log.setLevel(logging.ERROR)
        fetched = Path(hf_hub_download(repo_id=ESMC_300M_REPO, filename=ESMC_300M_FILE, local_dir=staging))
        if not fetched.is_file() or fetched.stat().st_size == 0:
            raise OSError(f"download produced no file at {fetched}")
        os.replace(fetched, target)
    except Exception as exc:  # noqa: BLE001 — any failure means the same thing to the user
        reason = type(exc).__name__
        raise InputError(f"could not download ESM-C 300M weights (offline? {reason}): {_download_help(dest_dir)}") from None
    finally:
        hub_log.setLevel(level)
    shutil.rmtree(staging, ignore_errors=True)
    return target


def ensure_esmc_300m(dest_dir: str | Path, weights: str | Path | None = None) -> Path:
    """The ESM-C 300M weights file: ``weights`` if given (must exist), else ``dest_dir/<file>`` if
    present, else download it there."""
    if weights is not None:
        weights = Path(weights)
        if not weights.is_file():
            raise InputError(f"ESM-C weights file not found: {weights} (protein.esmc_weights)")
        return weights
    target = Path(dest_dir) / ESMC_300M_WEIGHTS
    return target if target.is_file() else download_esmc_300m(dest_dir)


# ------------------------------------------------------------------------------------------ loading


def _first_line(exc: BaseException, limit: int = 200) -> str:
    text = str(exc).strip().splitlines()
    line = text[0] if text else type(exc).__name__
    return line if len(line) <= limit else line[: limit - 3] + "..."


def _read_state_dict(path: Path) -> dict[str, torch.Tensor]:
    """Tensors of a .pth (weights_only) or .safetensors file; CheckpointError on any problem."""
    if not path.is_file():
        raise CheckpointError(f"ESM-C weights file missing: {path}")
    if path.suffix == ".safetensors":
        try:
            state = load_file(str(path))
        except (SafetensorError, OSError, RuntimeError, ValueError) as exc:
            raise CheckpointError(f"ESM-C weights are corrupt or truncated: {path} ({_first_line(exc)})") from None
    else:
        try:
            state = torch.load(path, map_location="cpu", weights_only=True)
        except pickle.UnpicklingError as exc:
            # torch's weights-only unpickler names a disallowed class/function "Unsupported global";
            # anything else it rejects is bytes that are no pickle at all
            if "unsupported global" in str(exc).lower():
                raise CheckpointError(
                    f"ESM-C weights file holds objects other than tensors and was refused (never unpickled): {path}"
                ) from None
            raise CheckpointError(f"ESM-C weights are corrupt or not a PyTorch weights file: {path}") from None
        except Exception as exc:  # noqa: BLE001 — zip/pickle readers raise many types for bad bytes
            raise CheckpointError(f"ESM-C weights are corrupt or truncated: {path} ({_first_line(exc)})") from None
    if isinstance(state, dict) and len(state) == 1 and next(iter(state)) in ("state_dict", "model"):
        state = next(iter(state.values()))  # a state dict wrapped in {"state_dict": ...}
    if not isinstance(state, dict) or not all(
        isinstance(k, str) and isinstance(v, torch.Tensor) for k, v in state.items()
    ):
        raise CheckpointError(f"ESM-C weights file is not a state dict of named tensors: {path}")
    return state


def _check_shapes(model: nn.Module, state: dict[str, torch.Tensor], path: Path, dims: str) -> None:
    """One-line CheckpointError if keys or shapes differ from ``model``'s."""
    expected = model.state_dict()
    missing = sorted(set(expected) - set(state))
    unexpected = sorted(set(state) - set(expected))
    wrong = [k for k in expected if k in state and tuple(state[k].shape) != tuple(expected[k].shape)]
    if not (missing or unexpected or wrong):
        return
    parts = []
    if wrong:
        k = wrong[0]
        parts.append(
            f"{len(wrong)} tensors of the wrong shape, e.g. {k} is {tuple(state[k].shape)} "
            f"not {tuple(expected[k].shape)}"
        )
    if missing:
        parts.append(f"{len(missing)} missing, e.g. {missing[0]}")
    if unexpected:
        parts.append(f"{len(unexpected)} unexpected, e.g. {unexpected[0]}")
    raise CheckpointError(f"ESM-C weights {path} do not match an ESM-C with {dims}: {'; '.join(parts)}")


def load_esmc(
    weights_path: str | Path,
    d_model: int = 960,
    n_heads: int = 15,
    n_layers: int = 30,
    device: str | torch.device = "cpu",
) -> "ESMC":
    """Build ``ESMC(d_model, n_heads, n_layers, tokenizer)`` and load ``weights_path`` into it.

    The defaults are ESM-C 300M. ``.safetensors`` files are read with safetensors, anything else with
    ``torch.load(weights_only=True)``; nothing arbitrary is unpickled. A missing, truncated, corrupt or
    mismatched file raises :class:`CheckpointError` with one line. Returns the model in eval mode,
    fp32, on ``device``, with flash attention off (plain SDPA with a padding mask).
    """
    path = Path(weights_path)
    state = _read_state_dict(path)
    if d_model % n_heads:
        raise CheckpointError(f"ESM-C d_model {d_model} is not divisible by n_heads {n_heads}")
    from esm.models.esmc import ESMC  # slow import: only once the file is known to be readable

    model = ESMC(d_model=d_model, n_heads=n_heads, n_layers=n_layers, tokenizer=esmc_tokenizer(), use_flash_attn=False)
    dims = f"d_model={d_model}, n_heads={n_heads}, n_layers={n_layers}"
    _check_shapes(model, state, path, dims)
    try:
        model.load_state_dict(state, strict=True)
    except RuntimeError as exc:
        raise CheckpointError(f"ESM-C weights {path} do not load into an ESM-C with {dims}: {_first_line(exc)}") from None
    return model.float().to(device).eval()


# ----------------------------------------------------------------------------------------- backbone


@torch.no_grad()
def head_weights(attn, x: torch.Tensor, seq_id: torch.Tensor | None) -> torch.Tensor:
    """The softmax weights of ESM-C's ``MultiHeadAttention`` ``attn`` on its input ``x (B, N, D)``
    (``seq_id``: the padding mask its forward got; positions attend within their own id) → ``(B, H, N, N)`` fp32."""
    q, k, _ = torch.chunk(attn.layernorm_qkv(x), 3, dim=-1)
    q, k = attn._apply_rotary(attn.q_ln(q).to(q.dtype), attn.k_ln(k).to(q.dtype))
    q, k = (t.unflatten(-1, (attn.n_heads, attn.d_head)).transpose(1, 2).float() for t in (q, k))  # (B, H, N, d)
    scores = q @ k.transpose(-1, -2) / attn.d_head ** 0.5
    if seq_id is not None:
        scores = scores.masked_fill(~(seq_id.unsqueeze(-1) == seq_id.unsqueeze(-2)).unsqueeze(1), float("-inf"))
    return scores.softmax(-1)


class ESMCBackbone(nn.Module):
    """Backbone protocol around an ``esm.models.esmc.ESMC``.

    tokens ``(B, N)`` long, ESM tokenizer ids (BOS ``<cls>`` first, EOS last, ``<pad>`` after EOS) →
    logits ``(B, N, 20)`` over :data:`AMINO_ACIDS` and hidden ``(B, N, d_model)``.

    ``hidden_layer`` indexes ``ESMCOutput.hidden_states`` — the residual stream after each of the
    ``n_layers`` transformer blocks (before the final LayerNorm; token embeddings are not among them):
    0 = after the first block, ``n_layers - 1`` (or -1) = after the last; negative counts from the end.
    This is the same indexing as esm's ``LogitsConfig.ith_hidden_layer``. ``None`` reads the model's
    output after the final LayerNorm instead (``ESMCOutput.embeddings``, what the sequence head sees):
    the embedding of the metrics, whose scale does not drift with depth like the residual stream's.

    Padding: ESM-C masks attention by ``tokens != pad`` (its default ``sequence_id``), and pads come
    after EOS, so a padded sequence gets the same logits at its real positions as alone. Callers
    usually feed equal-length batches (all ``masked_sequence(L)``); logits at pad positions are
    meaningless and must be ignored.

    ``bf16=True`` runs the forward under bf16 autocast, on CUDA only (CPU always runs fp32); outputs are
    returned as fp32 either way.
    """

    def __init__(self, model: "ESMC", hidden_layer: int | None = -1, bf16: bool = False):
        super().__init__()
        self.model = model
        self.tokenizer = model.tokenizer
        tok = self.tokenizer
        self.mask_id = int(tok.mask_token_id)
        self.pad_id = int(tok.pad_token_id)
        self.bos_id = int(tok.cls_token_id)  # ESM calls BOS <cls>; tokenizer.bos_token_id is the same
        self.eos_id = int(tok.eos_token_id)
        ids = [tok.convert_tokens_to_ids(a) for a in AMINO_ACIDS]
        unk = tok.convert_tokens_to_ids(tok.unk_token)
        if any(not isinstance(i, int) or i == unk for i in ids):
            raise ValueError(f"the ESM-C tokenizer does not know all of {AMINO_ACIDS}: {ids}")
        specials = {self.mask_id, self.pad_id, self.bos_id, self.eos_id}
        if len(specials) != 4 or specials & set(ids):
            raise ValueError("the ESM-C tokenizer's special ids collide with each other or with amino acids")
        self.register_buffer("vocab_token_ids", torch.tensor(ids, dtype=torch.long), persistent=False)
        self.vocab_size = len(AMINO_ACIDS)
        self.hidden_dim = int(model.embed.embedding_dim)
        self.n_layers = len(model.transformer.blocks)
        if hidden_layer is not None and not -self.n_layers <= hidden_layer < self.n_layers:
            raise InputError(
                f"hidden_layer {hidden_layer} is outside [-{self.n_layers}, {self.n_layers - 1}] "
                f"for an ESM-C with {self.n_layers} layers"
            )
        self.hidden_layer = hidden_layer
        self.hidden_index = None if hidden_layer is None else hidden_layer % self.n_layers
        self.bf16 = bool(bf16)
        shared = protein_tokens()  # the one encoder's ids (:meth:`encode`) must be this model's
        if (tuple(ids), self.mask_id, self.pad_id, self.bos_id, self.eos_id) != (
                shared.aa_ids, shared.mask, shared.pad, shared.bos, shared.eos):
            raise ValueError("the model's tokenizer ids differ from the ESM-C tokenizer's (protein_tokens)")
        self._id_to_char = {i: a for a, i in zip(ids, AMINO_ACIDS)} | {self.mask_id: MASK_CHAR}

    def forward(self, tokens: torch.Tensor) -> BackboneOutput:
        """tokens ``(B, N)`` long → logits ``(B, N, 20)`` fp32 and hidden ``(B, N, D)`` fp32."""
        if tokens.ndim != 2:
            raise ValueError(f"tokens must be (B, N), got shape {tuple(tokens.shape)}")
        autocast = (
            torch.autocast(device_type="cuda", dtype=torch.bfloat16)
            if self.bf16 and tokens.device.type == "cuda"
            else contextlib.nullcontext()
        )
        with autocast:
            out = self.model(sequence_tokens=tokens)  # sequence_id defaults to tokens != pad
        logits = out.sequence_logits.index_select(-1, self.vocab_token_ids.to(tokens.device))
        hidden = out.embeddings if self.hidden_index is None else out.hidden_states[self.hidden_index]
        return BackboneOutput(logits=logits.float(), hidden=hidden.float())

    @contextlib.contextmanager
    def capture_attention(self):
        """While open, every forward appends the last block's attention weights, averaged over heads,
        ``(B, N, N)`` fp32, to the yielded list: DAPD's dependency graph (:func:`mdm_mi.mi.dapd.attention_source`).
        ESM-C's fused attention returns no weights, so a hook on the last block's attention recomputes
        them from that block's input, as its forward does (QKV, q/k LayerNorm, rotary, padding mask)."""
        seen: list[torch.Tensor] = []
        hook = self.model.transformer.blocks[-1].attn.register_forward_hook(
            lambda attn, args, out: seen.append(head_weights(attn, *args).mean(dim=1)))
        try:
            yield seen
        finally:
            hook.remove()

    # ---- token helpers ------------------------------------------------------------------------

    def encode(self, seqs: Sequence[str], device: str | torch.device | None = None) -> torch.Tensor:
        """``B`` sequences over :data:`AMINO_ACIDS` (``_`` = masked) → ``(B, N)`` long, each
        ``BOS + residues + EOS`` and right-padded with the pad id to the longest (N = max len + 2):
        :meth:`ProteinTokens.encode_batch <mdm_mi.protein.tokens.ProteinTokens.encode_batch>`.

        Raises :class:`InputError` naming any other letter.
        """
        if isinstance(seqs, str):
            raise TypeError("encode takes a list of sequences, not one string")
        if not seqs:
            raise InputError("no sequences to encode")
        tokens = protein_tokens().encode_batch(seqs, masks=True)
        return tokens.to(device if device is not None else self.vocab_token_ids.device)

    def decode_tokens(self, tokens: torch.Tensor) -> list[str]:
        """``(B, N)`` or ``(N,)`` ids → sequences: BOS/EOS/pad dropped, mask shown as ``_``, any other
        token as the tokenizer spells it."""
        if tokens.ndim == 1:
            tokens = tokens.unsqueeze(0)
        skip = {self.bos_id, self.eos_id, self.pad_id}
        seqs = []
        for row in tokens.tolist():
            chars = []
            for i in row:
                if i in skip:
                    continue
                c = self._id_to_char.get(i)
                chars.append(c if c is not None else self.tokenizer.convert_ids_to_tokens(i))
            seqs.append("".join(chars))
        return seqs

    def residues(self, tokens: torch.Tensor) -> torch.Tensor:
        """``(B, N)`` ids → ``(B, N)`` bool: positions holding a residue or a mask (not BOS/EOS/pad)."""
        return ~torch.isin(tokens, torch.tensor([self.pad_id, self.bos_id, self.eos_id], device=tokens.device))

    def at_layer(self, layer: int | None) -> "ESMCBackbone":
        """The same ESM-C reading block ``layer`` (None = after the final LayerNorm): the metrics' embedder."""
        return ESMCBackbone(self.model, layer, self.bf16).to(self.vocab_token_ids.device).eval()

    def masked_sequence(self, length: int, device: str | torch.device | None = None) -> torch.Tensor:
        """``(length + 2,)`` long: BOS, ``length`` masks, EOS — a fully masked protein to decode."""
        if length < 1:
            raise InputError(f"protein length must be >= 1, got {length}")
        t = torch.full((length + 2,), self.mask_id, dtype=torch.long)
        t[0], t[-1] = self.bos_id, self.eos_id
        return t.to(device if device is not None else self.vocab_token_ids.device)

