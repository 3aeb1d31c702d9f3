"""Random draws of the studies' torch models, made on the CPU from a seeded generator and moved
to where they are used.

Choice: every draw comes from a CPU `torch.Generator` whatever the device the model runs on, so
one seed gives the same noise on a laptop and on a GPU node (CUDA generators give other
numbers), at the cost of a host-to-device copy per draw.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch


def normal(shape: Sequence[int], generator: torch.Generator, like: torch.Tensor) -> torch.Tensor:
    """Standard normal draws of `shape` in the dtype and on the device of `like`."""
    draws = torch.randn(tuple(shape), generator=generator, dtype=like.dtype)
    return draws.to(like.device)


def uniform(shape: Sequence[int], generator: torch.Generator, like: torch.Tensor) -> torch.Tensor:
    """Uniform draws on [0, 1) of `shape` in the dtype and on the device of `like`."""
    return torch.rand(tuple(shape), generator=generator, dtype=like.dtype).to(like.device)


def integers(
    low: int, high: int, shape: Sequence[int], generator: torch.Generator, like: torch.Tensor
) -> torch.Tensor:
    """Integers uniform on [low, high) of `shape` on the device of `like`."""
    return torch.randint(low, high, tuple(shape), generator=generator).to(like.device)


def anchor(module: torch.nn.Module) -> torch.Tensor:
    """A tensor with the module's dtype and device, the `like` of the draws a sampler makes: its
    first parameter, else its first buffer, else a CPU float32 scalar."""
    return next(module.parameters(), next(module.buffers(), torch.zeros(())))


def sinusoidal_embedding(times: torch.Tensor, width: int) -> torch.Tensor:
    """Sinusoidal features (…, width) of times (…) in [0, 1]: sin and cos at `width` // 2
    frequencies spaced geometrically from 1 to 1000 (the time input of the flow-matching and
    trajectory networks)."""
    frequencies = torch.exp(
        torch.linspace(0.0, math.log(1000.0), width // 2, dtype=times.dtype, device=times.device)
    )
    angles = times[..., None] * frequencies
    return torch.cat([angles.sin(), angles.cos()], -1)
