"""Keyed random streams: one per decoded row, so a fill's tokens depend only on its own key.

A single ``torch.Generator`` shared by a batch makes every row's draws depend on the other rows of
its batch, on the batch size and on how many rows are still active (rows leave :func:`decode` as
they finish). Each fill's random stream must depend only on (item, fill, sampler,
setting). :class:`RowStreams` does that with a counter-based hash: the uniform behind the Gumbel
noise of value ``v`` at position ``n`` in pass ``step`` of row ``b`` is a pure function of
``(key_b, step, n, v)``. No state is kept, so the same key gives the same fill on any batch
composition and device (the hash is exact integer arithmetic).

    keys = row_keys(seed=0, items=torch.arange(B), fill=0, tag="eb gamma=0.2")
    res = decode(backbone, tokens, sampler, RowStreams(keys), decoding=Decoding(temperature=1.0))
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

import torch

MASK64 = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15  # splitmix64's increment (odd: a bijection of the counter)
MIX1, MIX2 = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB  # splitmix64's finaliser multipliers
STEP_STRIDE, POS_STRIDE = 0xD1B54A32D192ED03, 0x8CB92BA72F3D8DD7  # odd constants spreading the counters
MANTISSA = 53  # bits of a float64 uniform


def _signed(x: int) -> int:
    """A 64-bit pattern as the int64 torch stores."""
    x &= MASK64
    return x - (1 << 64) if x >> 63 else x


def _shr(x: torch.Tensor, s: int) -> torch.Tensor:
    """Logical right shift of int64 bit patterns (torch's ``>>`` is arithmetic)."""
    return (x >> s) & ((1 << (64 - s)) - 1)


def mix64(x: torch.Tensor) -> torch.Tensor:
    """splitmix64's finaliser on int64 tensors (wrapping multiplication): a bijective 64-bit hash."""
    x = (x ^ _shr(x, 30)) * _signed(MIX1)
    x = (x ^ _shr(x, 27)) * _signed(MIX2)
    return x ^ _shr(x, 31)


def _tag_key(seed: int, fill: int, tag: str) -> int:
    digest = hashlib.blake2b(f"{seed}|{fill}|{tag}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little")


def row_keys(seed: int, items: torch.Tensor, fill: int, tag: str) -> torch.Tensor:
    """``(B,)`` int64 keys of fill ``fill`` of the items numbered ``items (B,)`` (their index in the
    run's item set, so a prefix of a set keeps its keys), for the sampler setting named by ``tag``
    (e.g. ``Sampler.key()``) and the run's ``seed``."""
    assert items.ndim == 1, items.shape
    base = torch.tensor(_signed(_tag_key(seed, fill, tag)), dtype=torch.int64)
    return mix64(base + items.to(torch.int64).cpu() * _signed(GOLDEN))


@dataclass(frozen=True)
class RowStreams:
    """One keyed stream per row of a batch: ``keys (B,)`` int64 (see :func:`row_keys`)."""

    keys: torch.Tensor

    def __post_init__(self):
        assert self.keys.ndim == 1 and self.keys.dtype == torch.int64, (self.keys.shape, self.keys.dtype)

    def __len__(self) -> int:
        return len(self.keys)

    def rows(self, idx: torch.Tensor) -> "RowStreams":
        """The streams of rows ``idx`` (e.g. the rows still decoding)."""
        return RowStreams(self.keys[idx.cpu()])

    def uniform(self, step: int, shape: tuple[int, int], device: torch.device | str = "cpu") -> torch.Tensor:
        """``(B, N, V)`` float64 uniforms in (0, 1) for pass ``step`` of each row: a function of
        ``(key, step, position, value)`` only."""
        n, v = shape
        x = self.keys.view(-1, 1, 1).to(device) + _signed(step * STEP_STRIDE)
        x = x + torch.arange(n, device=device).view(1, n, 1) * _signed(POS_STRIDE)
        x = mix64(mix64(x) + torch.arange(v, device=device).view(1, 1, v) * _signed(GOLDEN))
        return (_shr(x, 64 - MANTISSA).double() + 0.5) / float(1 << MANTISSA)
