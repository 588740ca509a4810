"""The change paths of docs/developing.md, each walked by a toy: a native backbone (one class and one
domain entry) and a new domain (its package, its entry, one verb) reach the library's verbs and
functions without touching anything else. (A sampler, its class with its spec and its list entry:
tests/test_sampler_registry.py; a config key:
tests/test_config.py and tests/test_protein.py; a Hugging Face backbone: tests/test_hf.py.)"""

from __future__ import annotations

import json

import pytest
import torch

from mdm_mi.core.backbone import GRID, SEQUENCE, BackboneOutput, Capabilities, capabilities
from mdm_mi.core.map_domain import MapDomain
from mdm_mi.core.samplers import decode
from mdm_mi.models.domains import DOMAINS, Domain, register_domain
from mdm_mi.models.loading import load_model
from mdm_mi.mi.probe import exact_mi
from mdm_mi.sampling.registry import build_sampler

V, N = 4, 6


class ToyBackbone(torch.nn.Module):
    """A native backbone: the protocol's four attributes, a forward and its capabilities. Its logits
    depend on the tokens, so probing sees dependence."""

    vocab_size, mask_id, hidden_dim = V, V, 8
    capabilities = Capabilities(GRID, fixed_length=N, embeds=False)

    def __init__(self):
        super().__init__()
        torch.manual_seed(0)
        self.emb = torch.nn.Embedding(V + 1, 8)
        self.out = torch.nn.Linear(8, V)
        self.register_buffer("vocab_token_ids", torch.arange(V), persistent=False)

    def forward(self, tokens: torch.Tensor) -> BackboneOutput:
        h = self.emb(tokens)
        h = h + h.mean(1, keepdim=True)  # every position sees the others
        return BackboneOutput(logits=self.out(h), hidden=h)


def _load_toy(directory, meta, device):
    return ToyBackbone().to(device).eval()


class ToyMap(MapDomain):
    def check(self, text): return text
    def tokens(self, context, backbone, device): return torch.full((N,), V, device=device)
    def parse_cell(self, spec, context): return 0
    def name(self, i, context): return f"cell {i}"
    def draw(self, context, pred, label, cell, out, backbone_name): pass


@pytest.fixture
def toy_domain(tmp_path):
    """The one table entry a new domain (or a native backbone of its own kind) adds."""
    entry = Domain("toy", ("toy/model",), ("toy/head",), (".toy",), _load_toy, lambda: None,
                   lambda meta: "toy backbone", lambda: ToyMap())
    register_domain(entry)
    folder = tmp_path / "results" / "run" / "toy" / "model"
    folder.mkdir(parents=True)
    (folder / "meta.json").write_text(json.dumps({"domain": "toy"}))
    yield folder
    DOMAINS.pop("toy")


def test_a_native_backbone_decodes_and_is_probed_through_the_one_loader(toy_domain):
    backbone, meta = load_model(toy_domain, "cpu", "toy")
    assert meta["domain"] == "toy" and capabilities(backbone).fixed_length == N
    tokens = torch.full((3, N), V)
    out = decode(backbone, tokens, build_sampler("eb", gamma=0.5), torch.Generator().manual_seed(0))
    assert (out.tokens < V).all() and (out.passes >= 1).all()  # every mask filled, passes counted
    label = exact_mi(backbone, torch.full((N,), V)).label
    assert label.shape == (N, N) and (label >= -1e-9).all()


def test_a_new_domain_is_found_by_the_user_verbs(toy_domain):
    """``find_model`` searches the entry's folders; ``backbone_name`` describes it; mi-map's input is
    its ``mapper``."""
    from mdm_mi.models.domains import backbone_name
    from mdm_mi.models.locate import find_model

    assert find_model("toy", toy_domain.parents[2]) == toy_domain
    assert backbone_name(toy_domain) == "toy backbone"
    assert isinstance(DOMAINS["toy"].mapper(), ToyMap)


def test_a_backbone_without_declared_capabilities_is_a_sequence_model_of_any_length():
    class Plain:
        pass

    caps = capabilities(Plain())
    assert caps == Capabilities(SEQUENCE, None, embeds=False)
