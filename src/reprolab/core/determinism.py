"""Seeding and deterministic execution for every job.

A job's seed is derived from (global seed, study, method, seed index) by hashing, so two jobs never
share a random stream by accident and the same job always gets the same one. Torch is put in
deterministic mode with a fixed thread count, because the number of threads changes the order of
floating-point sums and therefore the last bits of every result.
"""

from __future__ import annotations

import hashlib
import os
import random
from typing import TYPE_CHECKING

import numpy as np

if TYPE_CHECKING:
    import torch


def derive_seed(global_seed: int, *parts: object) -> int:
    """Return a 31-bit seed that is a pure function of the global seed and the named parts."""
    text = "/".join([str(global_seed), *map(str, parts)])
    digest = hashlib.sha256(text.encode()).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF


def seed_everything(seed: int, threads: int) -> np.random.Generator:
    """Seed python, numpy and torch, make torch deterministic on `threads` threads.

    Returns a numpy Generator seeded with `seed` so callers do not reach for the global state.
    CUBLAS_WORKSPACE_CONFIG is set for deterministic cuBLAS when a GPU is used at paper scale.
    """
    import torch

    os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True)
    return np.random.default_rng(seed)


def resolve_device(name: str) -> torch.device:
    """The torch device a params value names: ``auto`` → CUDA when present, else CPU."""
    import torch

    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    return torch.device(name)
