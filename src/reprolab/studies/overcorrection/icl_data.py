"""In-context linear regression with a prior: the prompts the readers are trained on and the
shifted world they are tested in.

A seed's prior W₀ (p × d, N(0, 1) entries) is the centre of the training tasks: every training
prompt draws its own map W = W₀ + σ·N(0, 1), its n context items x_k ~ N(0, I/d) with answers
y_k = W x_k + noise·N(0, I_p), and a query x_q ~ N(0, I/d) whose target W x_q is noiseless. A
reader trained on them learns ŷ(∅) ≈ W₀ x_q and to correct it from the context.

The test truth is a shifted world W* = W₀ + shift·N(0, 1), far from the prior, so ŷ(∅) is wrong
and items of the shifted world correct it. Its test queries come with candidate pools built by
the toy's `make_trial` (near-duplicates of the query, shuffled; toy_world's docstring).

Every draw comes from the numpy Generator passed in; draw order, per training batch: the maps,
the items, the query, the items' noise.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from reprolab.studies.overcorrection.toy_world import Trial, gaussian_inputs, make_trial


class Prompts(NamedTuple):
    """A batch of prompts: x (B, n, d) and y (B, n, p) the context items, x_query (B, d) the
    queries and y_query (B, p) their noiseless targets."""

    x: np.ndarray
    y: np.ndarray
    x_query: np.ndarray
    y_query: np.ndarray


def draw_prior(rng: np.random.Generator, dim: int = 8, outputs: int = 4) -> np.ndarray:
    """A seed's prior W₀, (outputs, dim) with N(0, 1) entries."""
    return rng.standard_normal((outputs, dim))


def training_prompts(
    rng: np.random.Generator,
    prior: np.ndarray,
    batch: int,
    n: int,
    sigma: float,
    noise: float,
) -> Prompts:
    """`batch` training prompts of n context items each: per prompt W = W₀ + σ·N(0, 1), items
    y_k = W x_k + noise·N(0, I_p), a noiseless target W x_q (module docstring). n = 0 gives
    (B, 0, d) and (B, 0, p) contexts."""
    outputs, dim = prior.shape
    maps = prior + sigma * rng.standard_normal((batch, outputs, dim))
    x = gaussian_inputs(rng, batch * n, dim).reshape(batch, n, dim)
    x_query = gaussian_inputs(rng, batch, dim)
    y = np.einsum("bpd,bnd->bnp", maps, x) + noise * rng.standard_normal((batch, n, outputs))
    return Prompts(x=x, y=y, x_query=x_query, y_query=np.einsum("bpd,bd->bp", maps, x_query))


def shifted_world(rng: np.random.Generator, prior: np.ndarray, shift: float) -> np.ndarray:
    """The test truth W* = W₀ + shift·N(0, 1), (p, d)."""
    return prior + shift * rng.standard_normal(prior.shape)


def shifted_trials(
    rng: np.random.Generator,
    truth: np.ndarray,
    count: int,
    pool: int = 60,
    duplicates: float = 0.3,
    duplicate_noise: float = 0.1,
    noise: float = 0.0,
) -> tuple[Trial, ...]:
    """`count` test queries of the world W*, each with its shuffled candidate pool (the toy's
    trials: `pool` items of which round(duplicates × pool) are near-duplicates of the query)."""
    if not 0.0 <= duplicates <= 1.0:
        raise ValueError(f"the duplicate share must lie in [0, 1], got {duplicates}")
    return tuple(
        make_trial(rng, truth, pool, duplicates, duplicate_noise, noise) for _ in range(count)
    )
