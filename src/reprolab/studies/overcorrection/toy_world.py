"""The smoke toy: linear in-context regression with a wrong prior and pools holding near-duplicates.

A world (one per seed) draws the task truth W* and the model's prior W₀ (p × d), independent with
N(0, 1) entries, so the prior is wrong by W₀ − W* of entry variance 2. Each trial is one query
with its own pool of `pool` candidate items:

* inputs are N(0, I/d), so ‖x‖² ≈ 1 and η ⟨x_k, x_q⟩ is of order η;
* round(`duplicates` × pool) items are near-duplicates of the query, x_q + `duplicate_noise` ·
  N(0, I/d), the rest independent draws; the pool is shuffled, so an item's index says nothing
  about its kind;
* the items' answers are y_k = W* x_k + `noise` · N(0, I_p) (noiseless by default), the query's
  truth y* = W* x_q is always noiseless.

Draw order, per world: W*, W₀, then per trial x_q, the duplicates' noise, the other items, the
shuffle, the answers' noise; so a Generator seeded alike gives the same world.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np


class QueryTrial(Protocol):
    """What the selectors, channels and measures read of a trial: a `Trial` of the toy, or a
    text trial (`text_trials.TextTrial`) whose x are item ids and whose retriever embeddings are
    its `inputs`."""

    x: np.ndarray
    y: np.ndarray
    x_query: np.ndarray
    y_query: np.ndarray
    duplicate: np.ndarray

    @property
    def inputs(self) -> np.ndarray: ...

    @property
    def query_inputs(self) -> np.ndarray: ...


@dataclass(frozen=True)
class Trial:
    """One query and its candidate pool: x (pool, d) and y (pool, p) the items, x_query (d,) and
    y_query (p,) the query and its true answer y*, duplicate (pool,) which items are
    near-duplicates of the query."""

    x: np.ndarray
    y: np.ndarray
    x_query: np.ndarray
    y_query: np.ndarray
    duplicate: np.ndarray

    @property
    def inputs(self) -> np.ndarray:
        """What a retriever embeds the items as: here their raw inputs x."""
        return self.x

    @property
    def query_inputs(self) -> np.ndarray:
        """What a retriever embeds the query as: here its raw input x_query."""
        return self.x_query


@dataclass(frozen=True)
class ToyWorld:
    """A seed's prior W₀ and truth W* (p, d) and its trials."""

    prior: np.ndarray
    truth: np.ndarray
    trials: tuple[Trial, ...]


def gaussian_inputs(rng: np.random.Generator, count: int, dim: int) -> np.ndarray:
    """count inputs drawn N(0, I/d), (count, dim)."""
    return rng.standard_normal((count, dim)) / np.sqrt(dim)


def make_trial(
    rng: np.random.Generator,
    truth: np.ndarray,
    pool: int,
    duplicates: float,
    duplicate_noise: float,
    noise: float,
) -> Trial:
    """One query and its shuffled pool for the truth W* (module docstring)."""
    dim = truth.shape[1]
    x_query = gaussian_inputs(rng, 1, dim)[0]
    n_dup = round(duplicates * pool)
    near = x_query + duplicate_noise * gaussian_inputs(rng, n_dup, dim)
    x = np.concatenate([near, gaussian_inputs(rng, pool - n_dup, dim)])
    is_dup = np.arange(pool) < n_dup
    order = rng.permutation(pool)
    x, is_dup = x[order], is_dup[order]
    y = x @ truth.T + noise * rng.standard_normal((pool, truth.shape[0]))
    return Trial(x=x, y=y, x_query=x_query, y_query=truth @ x_query, duplicate=is_dup)


def make_world(
    rng: np.random.Generator,
    trials: int,
    dim: int = 8,
    outputs: int = 4,
    pool: int = 60,
    duplicates: float = 0.3,
    duplicate_noise: float = 0.1,
    noise: float = 0.0,
) -> ToyWorld:
    """A seed's toy world: W*, W₀ and `trials` trials (module docstring); defaults are the
    design card's smoke sizes."""
    if not 0.0 <= duplicates <= 1.0:
        raise ValueError(f"the duplicate share must lie in [0, 1], got {duplicates}")
    truth = rng.standard_normal((outputs, dim))
    prior = rng.standard_normal((outputs, dim))
    made = tuple(
        make_trial(rng, truth, pool, duplicates, duplicate_noise, noise) for _ in range(trials)
    )
    return ToyWorld(prior=prior, truth=truth, trials=made)
