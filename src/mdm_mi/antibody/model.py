"""AntiBERTy (Ruffolo et al. 2021, arXiv 2112.07782) as a Hugging Face folder, converted once and safely.

The weights ship inside the PyPI package ``antiberty==0.1.3`` as a pickle
(``antiberty/trained_models/AntiBERTy_md_smooth/pytorch_model.bin``); a pickle can run code when it
is read, so it is read here only through ``torch.load(..., weights_only=True)`` (tensors and plain
containers; anything else is refused) and written once as ``model.safetensors`` beside a
``BertForMaskedLM`` ``config.json`` and a ``BertTokenizer`` (``vocab.txt``, case kept). The folder's
``MANIFEST.json`` names the model, its licence (MIT) and citation, and the sha256 of the source
pickle and of every written file, so a changed file is caught (:func:`~mdm_mi.infra.checkpoint.verify_manifest`).

    folder = convert_antiberty(find_source("/tmp/antiberty-0.1.3-py3-none-any.whl"), Path("antiberty_hf"))

The source is the wheel itself, an installed ``antiberty`` package folder (``pip install
".[antibody]"``), or ``auto`` (the installed package, found without importing it). Only the masked-LM
part is kept (``bert.*`` and ``cls.predictions.*``); the species / chain / graft heads and the pooler
are dropped (listed in the manifest).
"""

from __future__ import annotations

import hashlib
import importlib.util
import io
import json
import pickle
import zipfile
from dataclasses import dataclass
from pathlib import Path

import torch

from mdm_mi.core.backbone import check_backbone, check_output
from mdm_mi.core.hf_folder import DOMAIN, protein_alphabet
from mdm_mi.infra.checkpoint import MANIFEST, META, sha256_file
from mdm_mi.infra.errors import InputError
from mdm_mi.infra.io import atomic_path, write_json
from mdm_mi.models.loading import load_model

PACKAGE = "antiberty"
VERSION = "0.1.3"
MODEL_DIR = "antiberty/trained_models/AntiBERTy_md_smooth"  # inside the wheel / site-packages
VOCAB = "antiberty/trained_models/vocab.txt"
SOURCE_FILES = ("config.json", "pytorch_model.bin")
KEPT_PREFIXES = ("bert.embeddings.", "bert.encoder.", "cls.predictions.")  # what BertForMaskedLM reads
ABOUT = {
    "name": "AntiBERTy (AntiBERTy_md_smooth)",
    "source": f"PyPI {PACKAGE}=={VERSION}, {MODEL_DIR}/pytorch_model.bin",
    "licence": "MIT (Copyright (c) 2023 Jeffrey Ruffolo; the package's LICENSE.MD)",
    "citation": "Ruffolo JA, Gray JJ, Sulam J. Deciphering antibody affinity maturation with language models "
                "and weakly supervised learning. arXiv 2112.07782 (2021)",
    "parameters": "25.8M; BERT, 8 layers x 512, 8 heads, 25 tokens (20 amino acids + [PAD] [UNK] [CLS] [SEP] [MASK])",
    "training_data": "~558M antibody sequences of the Observed Antibody Space",
}
# the samplers' fallbacks for `infill` without a setting (mdm_mi.core.fallbacks): the CDR-H3 comparison's
# settings at sequential's passes ÷ 3 (16 test VH, 6 calibration VH; docs/record/antibody.md, 2026-12-04)
CALIBRATED = {"at": 3, "source": "snakemake antibody (config/antibody.yaml), CDR-H3 comparison of 2026-12-04, "
                                 "runs.json at divisor 3 (docs/figures/antibody/cdr3)",
              "samplers": {"naive": {"k": 3.3357}, "eb": {"gamma": 4.8232}, "threshold": {"tau": 0.22414},
                           "mi": {"gamma": 5.3970, "lam": 1.0}}}


@dataclass(frozen=True)
class Source:
    """AntiBERTy's three files as bytes: ``config`` (JSON), ``weights`` (the pickle), ``vocab``; ``where``
    names their origin for the manifest."""

    config: bytes
    weights: bytes
    vocab: bytes
    where: str


def find_source(spec: str | Path) -> Source:
    """``auto`` (the installed package), a ``.whl`` file or a package folder → its files; one-line
    :class:`InputError` when they are not there."""
    if str(spec) == "auto":
        found = importlib.util.find_spec(PACKAGE)  # locates the package without running its __init__
        if found is None or not found.submodule_search_locations:
            raise InputError(f"the {PACKAGE} package is not installed: pip install -e '.[antibody]' "
                             f"(or give --source the {PACKAGE}-{VERSION} wheel)")
        spec = Path(next(iter(found.submodule_search_locations))).parent
    path = Path(spec)
    names = [f"{MODEL_DIR}/{n}" for n in SOURCE_FILES] + [VOCAB]
    if path.is_file() and path.suffix == ".whl":
        try:
            with zipfile.ZipFile(path) as whl:
                config, weights, vocab = (whl.read(n) for n in names)
        except (zipfile.BadZipFile, KeyError) as exc:
            raise InputError(f"{path} is not an {PACKAGE} {VERSION} wheel with its weights ({exc})") from None
        return Source(config, weights, vocab, f"{path.name}")
    root = path if (path / MODEL_DIR).is_dir() else path.parent  # the site-packages folder or the package itself
    files = [root / n for n in names]
    missing = [str(f) for f in files if not f.is_file()]
    if missing:
        raise InputError(f"{spec}: not an {PACKAGE} wheel or package folder (missing {missing[0]})")
    config, weights, vocab = (f.read_bytes() for f in files)
    return Source(config, weights, vocab, str(path))


def read_weights(weights: bytes) -> dict:
    """The pickled state dict → ``{name: tensor}``, read with ``weights_only=True`` (no code runs)."""
    try:
        state = torch.load(io.BytesIO(weights), map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, RuntimeError, EOFError) as exc:
        first = (str(exc).strip().splitlines() or [""])[0][:160]
        raise InputError(f"the AntiBERTy weights are not a plain tensor dict ({first})") from None
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise InputError("the AntiBERTy weights are not a dict of tensors")
    return state


def masked_lm(config: dict, state: dict):
    """A ``BertForMaskedLM`` with the kept weights loaded (every one of its weights present) → (model,
    the dropped names)."""
    from transformers import BertConfig, BertForMaskedLM  # lazy: transformers adds ~1 s to every CLI start

    cfg = BertConfig(**{k: v for k, v in config.items() if k not in ("architectures", "_name_or_path",
                                                                        "transformers_version")})
    cfg.architectures = ["BertForMaskedLM"]
    model = BertForMaskedLM(cfg)
    kept = {k: v for k, v in state.items() if k.startswith(KEPT_PREFIXES) and not k.endswith("position_ids")}
    result = model.load_state_dict(kept, strict=False)
    missing = [k for k in result.missing_keys if "position_ids" not in k and k != "cls.predictions.decoder.bias"]
    if missing or result.unexpected_keys:
        raise InputError(f"the AntiBERTy weights do not fit BertForMaskedLM: missing {missing[:3]}, "
                         f"unexpected {result.unexpected_keys[:3]}")
    return model.eval(), sorted(set(state) - set(kept))


def convert_antiberty(source: Source, out: Path) -> dict:
    """Write ``out``: model.safetensors, config.json, the tokenizer files and MANIFEST.json (last) →
    the manifest."""
    from transformers import BertTokenizer  # lazy: transformers adds ~1 s to every CLI start

    model, dropped = masked_lm(json.loads(source.config), read_weights(source.weights))
    out.mkdir(parents=True, exist_ok=True)
    vocab = out / "source_vocab.txt"
    with atomic_path(vocab) as tmp:
        tmp.write_bytes(source.vocab)
    tokenizer = BertTokenizer(str(vocab), do_lower_case=False)
    model.save_pretrained(out, safe_serialization=True)
    tokenizer.save_pretrained(out)
    vocab.unlink()
    files = {p.name: sha256_file(p) for p in sorted(out.iterdir()) if p.is_file() and p.name != MANIFEST}
    manifest = ABOUT | {"converted_from": source.where,
                        "source_sha256": {"pytorch_model.bin": hashlib.sha256(source.weights).hexdigest(),
                                          "config.json": hashlib.sha256(source.config).hexdigest(),
                                          "vocab.txt": hashlib.sha256(source.vocab).hexdigest()},
                        "read_with": "torch.load(weights_only=True), written once as safetensors",
                        "dropped": dropped, "files": files, "calibrated": CALIBRATED}
    write_json(out / MANIFEST, manifest)
    return manifest


def mark_and_check(folder: Path, hidden_layer: int) -> str:
    """Write ``meta.json`` (domain ``hf``, the 20 amino acids, ``hidden_layer``), load the folder through
    :func:`mdm_mi.models.loading.load_model` and check one pass against the Backbone rules (the mask and
    every special token outside the vocabulary, so they are never probed or sampled) → a summary line."""
    meta = {"domain": DOMAIN, "tokens": protein_alphabet(), "alphabet": "protein", "hidden_layer": hidden_layer,
            "bf16": False, "architecture": "BertForMaskedLM", "model": ABOUT["name"]}
    write_json(folder / META, meta)
    backbone, _ = load_model(folder, "cpu", DOMAIN)
    check_backbone(backbone)
    specials = set(backbone.special_ids) | {backbone.mask_id}
    if specials & set(backbone.vocab_token_ids.tolist()):
        raise InputError(f"{folder}: a special token is in the vocabulary")  # check_backbone's rule, stated here too
    tokens = backbone.masked_sequence(3)[None]
    with torch.inference_mode():
        check_output(backbone, backbone(tokens), tokens)
    return (f"{backbone.vocab_size} tokens, {backbone.n_layers} layers x {backbone.hidden_dim}, "
            f"hidden layer {hidden_layer}, specials {sorted(specials)} never probed or sampled")
