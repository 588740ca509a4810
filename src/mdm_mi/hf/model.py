"""A Hugging Face masked language model as a :class:`~mdm_mi.core.backbone.SequenceBackbone`.

Any ``transformers.AutoModelForMaskedLM`` saved with ``save_pretrained`` (its tokenizer saved beside
it) becomes a backbone once a ``meta.json`` marks the folder (``mdm-mi import-hf``):

    {"domain": "hf", "tokens": ["A", "C", ...], "alphabet": "protein", "hidden_layer": -1, "bf16": false}

    backbone, meta = load_hf_model("my_model", "cpu")
    tokens = backbone.encode(["MK__QL"])                 # (1, 8): BOS + 6 tokens + EOS, `_` = mask
    out = backbone(tokens)                               # logits (1, 8, V), hidden (1, 8, D)

Rules the adapter keeps (docs/your_model.md): the logits are cut to the allowed tokens, in
``vocab_token_ids`` order (``logits[..., k]`` scores input id ``vocab_token_ids[k]``); the mask and
every special token of the tokenizer (``all_special_ids``) lie outside them, so they are never probed,
masked or sampled; pads (``pad_id``) come after EOS and are excluded by the attention mask.

Layers use Hugging Face's numbering of ``output.hidden_states`` (``num_hidden_layers + 1`` entries):
0 is the embedding output, ``k`` the output of transformer layer ``k``, -1 the last layer's output.
For ESM (``EsmForMaskedLM``) the last entry is taken *after* the final LayerNorm
(``emb_layer_norm_after``); BERT has no final LayerNorm (each layer ends in its own). Weights are
only ever read from a local folder (``local_files_only=True``); nothing is downloaded.
"""

from __future__ import annotations

import contextlib
import pickle
import warnings
from pathlib import Path
from typing import Sequence

import torch
from torch import nn

from mdm_mi.core.backbone import BackboneOutput
from mdm_mi.core.hf_folder import DOMAIN, check_tokens
from mdm_mi.infra.reader import MASK_CHAR, positions
from mdm_mi.infra.checkpoint import CheckpointError, META
from mdm_mi.infra.errors import InputError
from mdm_mi.infra.io import read_json

MAX_REASON = 240  # characters of a library's error kept in a one-line CheckpointError
MAX_MISSING_SHOWN = 3  # missing weights named in the error of a checkpoint without its masked-LM layer


class HFBackbone(nn.Module):
    """Backbone protocol around a Hugging Face masked LM and its tokenizer.

    tokens ``(B, N)`` long (the tokenizer's ids: BOS first, EOS last, pads after EOS) → logits
    ``(B, N, V)`` over ``alphabet`` (V tokens) and hidden ``(B, N, D)`` of ``hidden_layer``
    (Hugging Face numbering, see the module docstring; ``None`` = -1).
    """

    def __init__(self, model, tokenizer, alphabet: Sequence[str], hidden_layer: int | None = -1, bf16: bool = False):
        super().__init__()
        self.model, self.tokenizer = model, tokenizer
        if tokenizer.mask_token_id is None:
            raise CheckpointError(f"the tokenizer of {type(model).__name__} has no mask token: not a masked LM")
        self.mask_id = int(tokenizer.mask_token_id)
        self.pad_id = _first_id(tokenizer, "pad_token_id")
        self.bos_id = _first_id(tokenizer, "bos_token_id", "cls_token_id")
        self.eos_id = _first_id(tokenizer, "eos_token_id", "sep_token_id")
        self.special_ids = tuple(sorted(set(map(int, tokenizer.all_special_ids)) - {self.mask_id}))
        ids = _token_ids(tokenizer, alphabet)
        _check_ids_fit(model, ids + [self.mask_id, *self.special_ids])
        self.max_tokens = _max_positions(model)  # BOS + tokens + EOS; None: no position table (rotary)
        self.register_buffer("vocab_token_ids", torch.tensor(ids, dtype=torch.long), persistent=False)
        self.alphabet, self.vocab_size = list(alphabet), len(ids)
        self.hidden_dim = int(model.config.hidden_size)
        self.n_layers = int(model.config.num_hidden_layers)
        layer = -1 if hidden_layer is None else int(hidden_layer)
        if not -(self.n_layers + 1) <= layer <= self.n_layers:
            raise InputError(f"hidden_layer {layer} is outside [-{self.n_layers + 1}, {self.n_layers}] for a model "
                             f"with {self.n_layers} layers (0 = embeddings, -1 = last layer)")
        self.hidden_layer, self.bf16 = layer, bool(bf16)
        self._to_id = dict(zip(self.alphabet, ids))
        self._to_token = {i: t for t, i in self._to_id.items()} | {self.mask_id: MASK_CHAR}
        self._joiner = "" if all(len(t) == 1 for t in self.alphabet) else " "
        self._attention_sink: list[torch.Tensor] | None = None  # open: capture_attention()

    @torch.no_grad()  # frozen; also keeps caches made under inference_mode (ESM's rotary) usable outside it
    def forward(self, tokens: torch.Tensor) -> BackboneOutput:
        """tokens ``(B, N)`` long → logits ``(B, N, V)`` fp32 and hidden ``(B, N, D)`` fp32."""
        assert tokens.ndim == 2, tokens.shape
        if self.max_tokens is not None and tokens.shape[1] > self.max_tokens:
            raise InputError(f"{tokens.shape[1]} tokens (BOS and EOS included) exceed the model's "
                             f"{self.max_tokens} positions")
        attention = (tokens != self.pad_id).long() if self.pad_id is not None else torch.ones_like(tokens)
        autocast = (torch.autocast(device_type="cuda", dtype=torch.bfloat16)
                    if self.bf16 and tokens.device.type == "cuda" else contextlib.nullcontext())
        sink = self._attention_sink
        with autocast, (_quiet_transformers() if sink is not None else contextlib.nullcontext()):
            out = self.model(input_ids=tokens, attention_mask=attention, output_hidden_states=True,
                             output_attentions=sink is not None)
        if sink is not None:
            if not out.attentions:
                raise InputError(f"{type(self.model).__name__} returned no attention weights: DAPD cannot read its graph")
            sink.append(out.attentions[-1].float().mean(dim=1))  # last layer, heads averaged: (B, N, N)
        logits = out.logits.index_select(-1, self.vocab_token_ids.to(tokens.device))
        return BackboneOutput(logits=logits.float(), hidden=out.hidden_states[self.hidden_layer].float())

    @contextlib.contextmanager
    def capture_attention(self):
        """While open, every forward also asks the model for its attention weights and appends the last
        layer's, averaged over heads, ``(B, N, N)`` fp32 (BOS, EOS and pads included; pads get none), to
        the yielded list: DAPD's dependency graph (:func:`mdm_mi.mi.dapd.attention_source`), taken from
        the very pass a sampler decodes with. An SDPA model computes that pass with its eager kernel
        (transformers' fallback for ``output_attentions``): the same logits, a slower pass."""
        seen: list[torch.Tensor] = []
        self._attention_sink = seen
        try:
            yield seen
        finally:
            self._attention_sink = None

    # ---- the SequenceBackbone extras -------------------------------------------------------------

    @property
    def max_length(self) -> int | None:
        """The most tokens a sequence may have (the position table's, less BOS and EOS), or None (no
        table: rotary or relative positions)."""
        return self.max_tokens - 2 if self.max_tokens is not None else None

    @property
    def one_char_tokens(self) -> bool:
        """Whether every token of the alphabet is one character (then spaces in a sequence mean nothing)."""
        return self._joiner == ""

    def split(self, seq: str) -> list[str]:
        """One sequence → its tokens, as every verb reads them (:func:`mdm_mi.infra.reader.positions`):
        characters for a one-character alphabet, else whitespace-separated."""
        return positions(seq, self.one_char_tokens)

    def encode(self, seqs: Sequence[str], device=None, names: Sequence[str] | None = None) -> torch.Tensor:
        """``B`` sequences over the alphabet (``_`` = masked) → ``(B, max len + 2)`` long: BOS + tokens
        + EOS, then pads. A token outside the alphabet, or a sequence longer than the model's position
        table, raises :class:`InputError` naming the sequence (``names[b]``, else its index)."""
        if isinstance(seqs, str) or not seqs:
            raise InputError("encode takes a non-empty list of sequences")
        rows = [self.split(s) for s in seqs]
        width = max(map(len, rows)) + 2
        pad = self.pad_id if self.pad_id is not None else self.eos_id
        out = torch.full((len(rows), width), pad, dtype=torch.long)
        for b, row in enumerate(rows):
            name = names[b] if names is not None else f"sequence {b}"
            bad = sorted({t for t in row if t != MASK_CHAR and t not in self._to_id})
            if bad:
                raise InputError(f"{name} has tokens outside the model's alphabet: {', '.join(map(repr, bad[:10]))}"
                                 + self._case_hint(bad))
            if self.max_tokens is not None and len(row) + 2 > self.max_tokens:
                raise InputError(f"{name} has {len(row)} tokens; the model's {self.max_tokens} positions hold at most "
                                 f"{self.max_tokens - 2} (BOS and EOS take two)")
            ids = [self.mask_id if t == MASK_CHAR else self._to_id[t] for t in row]
            out[b, : len(ids) + 2] = torch.tensor([self.bos_id, *ids, self.eos_id])
        return out.to(device if device is not None else self.vocab_token_ids.device)

    def _case_hint(self, bad: Sequence[str]) -> str:
        """A note for tokens outside the alphabet that are in it with other case (``m`` for ``M``)."""
        known = {t.casefold(): t for t in self.alphabet}
        other = sorted({known[t.casefold()] for t in bad if t.casefold() in known})
        if not other:
            return ""
        shown = ", ".join(map(repr, other[:10]))
        return f" (tokens are case-sensitive: the alphabet has {shown}; sequences are read as written)"

    def decode_tokens(self, tokens: torch.Tensor) -> list[str]:
        """``(B, N)`` or ``(N,)`` ids → sequences: BOS/EOS/pads dropped, mask shown as ``_``."""
        rows = tokens.reshape(-1, tokens.shape[-1]).tolist()
        skip = {self.bos_id, self.eos_id, self.pad_id}
        def spell(i: int) -> str:
            return self._to_token[i] if i in self._to_token else self.tokenizer.convert_ids_to_tokens(i)

        return [self._joiner.join(spell(i) for i in row if i not in skip) for row in rows]

    def masked_sequence(self, length: int, device=None) -> torch.Tensor:
        """``(length + 2,)`` long: BOS, ``length`` masks, EOS."""
        if length < 1:
            raise InputError(f"sequence length must be >= 1, got {length}")
        if self.max_tokens is not None and length + 2 > self.max_tokens:
            raise InputError(f"length {length} is too long: the model's {self.max_tokens} positions hold at most "
                             f"{self.max_tokens - 2} tokens (BOS and EOS take two)")
        t = torch.full((length + 2,), self.mask_id, dtype=torch.long)
        t[0], t[-1] = self.bos_id, self.eos_id
        return t.to(device if device is not None else self.vocab_token_ids.device)

    def residues(self, tokens: torch.Tensor) -> torch.Tensor:
        """``(B, N)`` ids → ``(B, N)`` bool: positions that are not BOS, EOS or a pad."""
        fixed = [i for i in (self.pad_id, self.bos_id, self.eos_id) if i is not None]
        return ~torch.isin(tokens, torch.tensor(fixed, device=tokens.device))

    def at_layer(self, layer: int | None) -> "HFBackbone":
        """The same model reading hidden states at ``layer`` (None = the last): the metrics' embedder."""
        return HFBackbone(self.model, self.tokenizer, self.alphabet, layer, self.bf16).to(self.vocab_token_ids.device).eval()


def _first_id(tokenizer, *names: str) -> int | None:
    """The first of the tokenizer's ``names`` (e.g. ``bos_token_id``, ``cls_token_id``) that is set."""
    return next((int(getattr(tokenizer, n)) for n in names if getattr(tokenizer, n, None) is not None), None)


def _check_ids_fit(model, ids: Sequence[int]) -> None:
    """Every id the tokenizer hands the model (alphabet, mask, specials) has an embedding and a logit;
    one-line :class:`CheckpointError` otherwise (a tokenizer saved for another model)."""
    rows = min(model.get_input_embeddings().num_embeddings, int(model.config.vocab_size))
    if max(ids) >= rows:
        raise CheckpointError(f"the tokenizer's ids reach {max(ids)}, but the model has only {rows} token ids: "
                              "the tokenizer beside the weights belongs to another model")


def _max_positions(model) -> int | None:
    """Tokens the model's learned position table holds (BOS and EOS included), or None when positions
    are not a table (rotary, relative). RoBERTa and ESM count positions from ``padding_idx + 1``."""
    if getattr(model.config, "position_embedding_type", "absolute") != "absolute":
        return None
    embeddings = getattr(model.base_model, "embeddings", None)
    table = getattr(embeddings, "position_embeddings", None)
    if not isinstance(table, nn.Embedding):
        return None
    pad = getattr(embeddings, "padding_idx", None)
    return table.num_embeddings - (pad + 1 if pad is not None else 0)


def _token_ids(tokenizer, alphabet: Sequence[str]) -> list[int]:
    """The tokenizer's id of every alphabet token; one-line error for an unknown one."""
    ids = [tokenizer.convert_tokens_to_ids(t) for t in alphabet]
    unk = tokenizer.unk_token_id
    missing = [t for t, i in zip(alphabet, ids) if i is None or (unk is not None and i == unk)]
    if missing:
        raise CheckpointError(f"the model's tokenizer does not know the alphabet tokens {missing[:10]}")
    return [int(i) for i in ids]


@contextlib.contextmanager
def _quiet_transformers():
    """transformers' loading chatter (e.g. the five-line ``GenerationMixin`` notice every BERT load
    prints) silenced, so a verb's one-line errors are not buried; warnings are restored after."""
    from transformers.utils import logging as hf_logging  # lazy: transformers adds ~1 s to every CLI start

    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            yield
    finally:
        hf_logging.set_verbosity(level)


def _first_sentence(exc: Exception, limit: int = MAX_REASON) -> str:
    """The first line of a library's error, ending at a sentence or word boundary within ``limit``."""
    line = (str(exc).strip().splitlines() or [""])[0]
    if len(line) <= limit:
        return line
    cut = line[:limit]
    end = cut.rfind(". ")
    return cut[: end + 1] if end > 0 else cut[: cut.rfind(" ")] + " …"


def _load_masked_lm(auto_class, source: Path):
    """The masked LM in ``source`` with every weight read from its files: one-line
    :class:`CheckpointError` for unreadable weights (a truncated safetensors file, a pickle holding
    more than tensors) and for a checkpoint whose masked-LM layer transformers would create with
    random weights (one saved from ``BertModel`` or ``BertForSequenceClassification``): it reports
    such weights as missing keys, which here are refused, never initialised."""
    from safetensors import SafetensorError  # lazy: with transformers

    try:
        model, info = auto_class.from_pretrained(source, local_files_only=True, output_loading_info=True)
    except SafetensorError as exc:
        raise CheckpointError(f"cannot read the weights in {source}: {_weights_file(source)} is truncated or not a "
                              f"safetensors file ({_first_sentence(exc)}); save the model again with "
                              "save_pretrained") from None
    except (OSError, ValueError) as exc:
        if _caused_by(exc, pickle.UnpicklingError):
            raise CheckpointError(f"cannot read the weights in {source}: {_weights_file(source)} is a pickle holding "
                                  "more than tensors, refused by torch.load(weights_only=True) (nothing in it was "
                                  "run); save the model as safetensors with save_pretrained from a source you "
                                  "trust") from None
        raise CheckpointError(f"cannot load a Hugging Face masked LM from {source}: {_first_sentence(exc)}") from None
    missing = sorted(info.get("missing_keys", []))
    if missing:
        shown = ", ".join(missing[:MAX_MISSING_SHOWN]) + (" …" if len(missing) > MAX_MISSING_SHOWN else "")
        raise CheckpointError(f"{source} has no weights for {len(missing)} parameters of {type(model).__name__} "
                              f"({shown}): transformers would use them newly initialised (random), so every label, "
                              "map and decode would be meaningless; give a folder saved from the masked LM itself "
                              "(an ...ForMaskedLM model's save_pretrained)") from None
    return model


def _caused_by(exc: BaseException, kind: type) -> bool:
    """Whether ``exc`` or an exception in its chain (``__cause__``/``__context__``) is a ``kind``."""
    seen = exc
    while seen is not None:
        if isinstance(seen, kind):
            return True
        seen = seen.__cause__ or seen.__context__
    return False


def _weights_file(source: Path) -> str:
    """The name of the weights file transformers reads in ``source`` (safetensors first)."""
    names = sorted(p.name for p in source.glob("*.safetensors")) or sorted(p.name for p in source.glob("*.bin"))
    return names[0] if names else "its weights file"


def hf_meta(directory: str | Path, meta: dict | None = None) -> dict:
    """The ``meta.json`` of an ``hf`` model folder (read here unless given), checked (one-line
    :class:`CheckpointError` otherwise)."""
    path = Path(directory) / META
    if meta is None and not path.is_file():
        raise CheckpointError(f"checkpoint file missing: {path} (mark the folder with `mdm-mi import-hf`)")
    meta = read_json(path) if meta is None else meta
    if not isinstance(meta, dict) or meta.get("domain") != DOMAIN or not isinstance(meta.get("tokens"), list):
        raise CheckpointError(f"{path} is not an 'hf' model's meta.json with a 'tokens' list")
    try:
        check_tokens(meta["tokens"], f"{path} 'tokens'")
    except InputError as exc:
        raise CheckpointError(f"{exc} (mark the folder again with `mdm-mi import-hf --alphabet ...`)") from None
    return meta


def weights_dir(directory: str | Path, meta: dict) -> Path:
    """Where the Hugging Face files are: ``meta["weights"]`` (relative to the folder), else the folder."""
    return (Path(directory) / meta.get("weights", ".")).resolve()


def load_hf_model(directory: str | Path, device: str | torch.device = "cpu", hidden_layer: int | None = None,
                  meta: dict | None = None):
    """Load an ``hf`` model folder → ``(HFBackbone in eval mode, meta)``, from local files only.

    ``hidden_layer`` overrides the layer in meta; ``meta``, read already by
    :func:`mdm_mi.models.loading.load_model` (the verbs' way in), is not read again. Missing or unreadable
    files raise one line."""
    from transformers import AutoModelForMaskedLM, AutoTokenizer  # lazy: transformers adds ~1 s to every CLI start

    meta = hf_meta(directory, meta)
    source = weights_dir(directory, meta)
    with _quiet_transformers():
        try:
            tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=True)
        except (OSError, ValueError, TypeError) as exc:  # TypeError: a tokenizer class without its vocab file
            raise CheckpointError(f"cannot load the tokenizer from {source} (save it beside the model with "
                                  f"tokenizer.save_pretrained): {_first_sentence(exc)}") from None
        model = _load_masked_lm(AutoModelForMaskedLM, source)
    layer = meta.get("hidden_layer", -1) if hidden_layer is None else hidden_layer
    backbone = HFBackbone(model.float(), tokenizer, meta["tokens"], layer, bool(meta.get("bf16", False)))
    return backbone.to(device).eval(), meta
