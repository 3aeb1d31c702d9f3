"""Selectors: which k of a pool of candidate items to give the model with a query.

Every selector takes the pool's (n, d) keys, the (d,) query and k first, then what else it needs,
and returns k distinct pool indices, int64, in the order it chose them. Ties break towards the
lowest index throughout.

* none: no items.
* random: k items drawn uniformly without replacement by the Generator passed in.
* top-k: the k items of highest cosine similarity to the query (cosine rather than the inner
  product, so an item's norm does not buy it a place; MMR with λ = 1 is then exactly top-k).
* MMR: maximal marginal relevance, greedily λ cos(key, query) − (1 − λ) max_{j∈S} cos(key, key_j).
* theory: the label-free rule S* = argmin_{|S|=k} ‖(I − η̂ Σ_S key_k key_kᵀ) query‖², greedily.
* oracle: greedily the items that minimise the true error ‖e(S)‖² (it reads y*; an upper bound).

The theory and oracle objectives are both the squared norm of a vector that each chosen item
moves by a fixed step (`greedy_steps`), so a greedy round scores every candidate with one
rank-one update, ‖v + s_i‖² = ‖v‖² + 2⟨v, s_i⟩ + ‖s_i‖², instead of recomputing the sum.
"""

from __future__ import annotations

import numpy as np


def _check_k(keys: np.ndarray, k: int) -> None:
    """Refuse a k the pool cannot supply (negative, or more than its items)."""
    if not 0 <= k <= len(keys):
        raise ValueError(f"cannot select k={k} of a pool of {len(keys)} items")


def _indices(chosen: list[int]) -> np.ndarray:
    """Chosen indices as the selectors' int64 array (an empty one for none)."""
    return np.asarray(chosen, dtype=np.int64)


def cosine_similarities(keys: np.ndarray, query: np.ndarray) -> np.ndarray:
    """cos(key_i, query) for each of the (n, d) keys, (n,); a zero vector has cosine 0 with
    anything."""
    norms = np.linalg.norm(keys, axis=1) * np.linalg.norm(query)
    dots = keys @ query
    return np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)


def select_none(keys: np.ndarray, query: np.ndarray, k: int) -> np.ndarray:
    """No items, whatever k (the no-information row); the arguments only match the other
    selectors' signature."""
    return _indices([])


def select_random(
    keys: np.ndarray, query: np.ndarray, k: int, rng: np.random.Generator
) -> np.ndarray:
    """k distinct items uniformly at random (the query is not looked at)."""
    _check_k(keys, k)
    return rng.choice(len(keys), size=k, replace=False).astype(np.int64)


def select_top_k(keys: np.ndarray, query: np.ndarray, k: int) -> np.ndarray:
    """The k items most cosine-similar to the query, most similar first (stable sort, so equal
    similarities keep index order)."""
    _check_k(keys, k)
    order = np.argsort(-cosine_similarities(keys, query), kind="stable")
    return order[:k].astype(np.int64)


def select_mmr(keys: np.ndarray, query: np.ndarray, k: int, lam: float = 0.5) -> np.ndarray:
    """Maximal marginal relevance: each round takes the item maximising λ cos(key, query) −
    (1 − λ) max_{j chosen} cos(key, key_j), the redundancy term being 0 for the first pick."""
    _check_k(keys, k)
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"MMR's lambda must lie in [0, 1], got {lam}")
    relevance = cosine_similarities(keys, query)
    norms = np.linalg.norm(keys, axis=1)
    unit = np.divide(keys, norms[:, None], out=np.zeros_like(keys), where=norms[:, None] > 0)
    redundancy = np.full(len(keys), -np.inf)
    open_ = np.ones(len(keys), dtype=bool)
    chosen: list[int] = []
    for _ in range(k):
        penalty = redundancy if chosen else np.zeros(len(keys))
        score = np.where(open_, lam * relevance - (1.0 - lam) * penalty, -np.inf)
        pick = int(np.argmax(score))
        chosen.append(pick)
        open_[pick] = False
        redundancy = np.maximum(redundancy, unit @ unit[pick])
    return _indices(chosen)


def greedy_steps(start: np.ndarray, steps: np.ndarray, k: int) -> np.ndarray:
    """Greedily k distinct rows of the (n, m) `steps` whose sum, added to `start`, has the
    smallest squared norm: each round adds the step that lowers ‖v‖² most (or raises it least,
    since exactly k are taken), scored for all candidates at once by the rank-one identity
    ‖v + s_i‖² = ‖v‖² + 2⟨v, s_i⟩ + ‖s_i‖² (‖v‖² is common to all and left out); ties go to the
    lowest index."""
    _check_k(steps, k)
    step_norms = np.einsum("ij,ij->i", steps, steps)
    vector = np.array(start, dtype=float)
    open_ = np.ones(len(steps), dtype=bool)
    chosen: list[int] = []
    for _ in range(k):
        score = np.where(open_, 2.0 * (steps @ vector) + step_norms, np.inf)
        pick = int(np.argmin(score))
        chosen.append(pick)
        open_[pick] = False
        vector = vector + steps[pick]
    return _indices(chosen)


def theory_objective(keys: np.ndarray, query: np.ndarray, eta: float) -> float:
    """‖(I − η Σ_k key_k key_kᵀ) query‖² of these (n, d) keys, computed directly: the squared
    residual of the query direction that the items leave uncorrected (the error is (W₀ − W*)
    times that residual in the noiseless toy)."""
    residual = query - eta * (keys.T @ (keys @ query))
    return float(residual @ residual)


def select_theory(keys: np.ndarray, query: np.ndarray, k: int, eta: float) -> np.ndarray:
    """The theory-guided rule: greedily minimise `theory_objective` over k items, without
    labels. The objective is the residual of the query direction; item i moves that residual
    by −η ⟨key_i, query⟩ key_i, so the greedy runs on those steps; η is the model's (estimated)
    attention scale η̂. Ties break by lowest index. Being greedy, the set is not always the exact
    argmin over |S| = k (on toy pools top-k's set sometimes scores lower at small k)."""
    steps = -eta * (keys @ query)[:, None] * keys
    return greedy_steps(query, steps, k)


def select_oracle(
    keys: np.ndarray,
    query: np.ndarray,
    k: int,
    values: np.ndarray,
    error0: np.ndarray,
    eta: float,
) -> np.ndarray:
    """The oracle upper-bound row: greedily minimise the true squared error ‖e(S)‖², where
    e(S) = e₀ + Σ_S a_k r_k with e₀ = ŷ(∅) − y* (this is where it reads the truth), a_k =
    η ⟨key_k, query⟩ and `values` the (n, p) residuals r_k."""
    steps = eta * (keys @ query)[:, None] * values
    return greedy_steps(error0, steps, k)
