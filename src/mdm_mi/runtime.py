"""Device and thread selection shared by every job."""

from __future__ import annotations

import torch

from mdm_mi.errors import InputError


def resolve_device(name: str) -> str:
    """``auto`` → ``cuda`` when a GPU is visible, else ``cpu``; ``cuda`` without a GPU is an error."""
    if name == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if name == "cuda" and not torch.cuda.is_available():
        raise InputError("device 'cuda' requested but no CUDA GPU is visible; use device: auto or cpu")
    if name not in ("cpu", "cuda"):
        raise InputError(f"device must be auto, cpu or cuda, got {name!r}")
    return name


def setup(threads: int, seed: int) -> None:
    """Fix torch's CPU thread count and global seed for a job."""
    torch.set_num_threads(max(1, threads))
    torch.manual_seed(seed)
