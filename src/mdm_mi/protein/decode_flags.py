"""The protein decoding flags: config ``protein.generate``, one dataclass field per key.

:class:`DecodeFlags` is how every protein verb decodes (``generate``, ``protein-compare(-part)``,
``protein-oracle-ceiling``); :class:`GenerateFlags` adds how many sequences, how many at once and how
they are scored (``generate`` and the comparisons). The rules pass the whole section, and each verb
passes its :class:`DecodeFlags` (``DecodeFlags.of(args)``) as one object through
:func:`mdm_mi.protein.generate.generate` to :func:`mdm_mi.core.samplers.decode`: a key added to the schema
and here reaches ``decode`` from every one of them; the defaults are read from the schema (``from_schema``).

    class GenerateArgs(SamplerFlags, GenerateFlags, ModelFlags): ...
"""

from __future__ import annotations

from dataclasses import dataclass

from mdm_mi.infra.flags import Decoding, from_schema


@dataclass(frozen=True, kw_only=True)
class DecodeFlags(Decoding):
    """How a protein is decoded (config ``protein.generate``): ``decode``'s settings and ``bf16``."""

    temperature: float = from_schema("protein.generate.temperature", "sampling temperature (0 = argmax)")
    bf16: bool = from_schema("protein.generate.bf16", (
        "decode under bf16 autocast (~1.6× faster per pass on an AMX-BF16 CPU); labels, oracle probes and the "
        "metric's embedder stay fp32"))


@dataclass(frozen=True, kw_only=True)
class GenerateFlags(DecodeFlags):
    """How many proteins are decoded, how many together, and the cluster-JSD metric that scores them."""

    n: int = from_schema("protein.generate.n", "sequences generated (per sampler setting)")
    batch_size: int = from_schema("protein.generate.batch_size", "sequences decoded together")
    clusters: int = from_schema("protein.generate.clusters", "k-means clusters of the JSD metric (paper: 15)")
    embed_layer: int | None = from_schema("protein.generate.embed_layer", (
        "embedder block mean-pooled for the metric (default: its output after the final norm)"))
