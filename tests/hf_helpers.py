"""Tiny random Hugging Face masked LMs saved to a folder, for the tests of :mod:`mdm_mi.hf` (no network)."""

from __future__ import annotations

from pathlib import Path

ESM_TOKENS = ["<cls>", "<pad>", "<eos>", "<unk>", *"LAGVSERTIDPKQNFYMHWCXBUZO.-", "<null_1>", "<mask>"]
BERT_TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *"ACDEFGHIKLMNPQRSTVWY"]
TINY = {"hidden_size": 16, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 32,
        "max_position_embeddings": 128}


def tiny_esm(folder: Path, seed: int = 0) -> Path:
    """A random ``EsmForMaskedLM`` (hidden 16, 2 layers, the 33-token ESM vocabulary) + tokenizer."""
    import torch
    from transformers import EsmConfig, EsmForMaskedLM, EsmTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.txt").write_text("\n".join(ESM_TOKENS) + "\n")
    torch.manual_seed(seed)
    config = EsmConfig(vocab_size=len(ESM_TOKENS), pad_token_id=1, mask_token_id=32, token_dropout=False,
                       position_embedding_type="rotary", **TINY)
    EsmForMaskedLM(config).save_pretrained(folder)
    EsmTokenizer(str(folder / "vocab.txt")).save_pretrained(folder)
    return folder


def tiny_bert(folder: Path, seed: int = 0, positions: int = TINY["max_position_embeddings"]) -> Path:
    """A random ``BertForMaskedLM`` (hidden 16, 2 layers, ``positions`` positions) over [PAD] [UNK] [CLS] [SEP] [MASK] + 20 amino acids."""
    import torch
    from transformers import BertConfig, BertForMaskedLM, BertTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    (folder / "vocab.txt").write_text("\n".join(BERT_TOKENS) + "\n")
    torch.manual_seed(seed)
    BertForMaskedLM(BertConfig(vocab_size=len(BERT_TOKENS), **(TINY | {"max_position_embeddings": positions}))).save_pretrained(folder)
    BertTokenizer(str(folder / "vocab.txt"), do_lower_case=False).save_pretrained(folder)
    return folder


TEXT_WORDS = ["the", "cat", "sat", "on", "mat", "dog", "ran", "##s"]


def tiny_text_bert(folder: Path, seed: int = 0, max_positions: int = 16, vocab_size: int | None = None) -> Path:
    """A random ``BertForMaskedLM`` over 5 specials + :data:`TEXT_WORDS` (multi-character tokens), with a
    short position table; ``vocab_size`` smaller than the tokenizer's makes a mismatched pair."""
    import torch
    from transformers import BertConfig, BertForMaskedLM, BertTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    tokens = BERT_TOKENS[:5] + TEXT_WORDS
    (folder / "vocab.txt").write_text("\n".join(tokens) + "\n")
    torch.manual_seed(seed)
    config = BertConfig(vocab_size=vocab_size or len(tokens), **(TINY | {"max_position_embeddings": max_positions}))
    BertForMaskedLM(config).save_pretrained(folder)
    BertTokenizer(str(folder / "vocab.txt"), do_lower_case=False).save_pretrained(folder)
    return folder
