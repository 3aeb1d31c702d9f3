"""Selectors: which k of a pool of candidate items to give the model with a query.

Every selector takes the pool's (n, d) keys, the (d,) query and k first, then what else it needs,
and returns k distinct pool indices, int64, in the order it chose them. Ties break towards the
lowest index throughout.

* none: no items.
* random: k items drawn uniformly without replacement by the Generator passed in.
* top-k: the k items of highest cosine similarity to the query (cosine rather than the inner
  product, so an item's norm does not buy it a place; MMR with λ = 1 is then exactly top-k).
* MMR: maximal marginal relevance, greedily λ cos(key, query) − (1 − λ) max_{j∈S} cos(key, key_j).
* theory: the label-free rule S* = argmin_{|S|=k} ‖(I − η̂ Σ_S key_k key_kᵀ) query‖², greedily
  (the card's literal rule; it changes when a model's keys and queries are rescaled against each
  other, which leaves the model unchanged).
* invariant: the label-free rule measured through the model's own key–query form,
  argmin Σ_h η̂_h (k_q^h − Σ_S a_k k_k^h)ᵀ(q_q^h − Σ_S a_k q_k^h), greedily; unchanged by that
  rescaling and by the sign of η̂.
* oracle: greedily the items that minimise the true error ‖e(S)‖² (it reads y*; an upper bound).

The theory and oracle objectives are both the squared norm of a vector that each chosen item
moves by a fixed step (`greedy_steps`), so a greedy round scores every candidate with one
rank-one update, ‖v + s_i‖² = ‖v‖² + 2⟨v, s_i⟩ + ‖s_i‖², instead of recomputing the sum; the
invariant objective is the inner product of two such vectors (`greedy_bilinear`).

`attention_query` fixes the sign of η̂ (and weighs the heads) before top-k or MMR on a model's
keys.
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


def greedy_bilinear(
    left: np.ndarray,
    right: np.ndarray,
    left_steps: np.ndarray,
    right_steps: np.ndarray,
    k: int,
) -> np.ndarray:
    """Greedily k distinct items i, each moving the pair (u, v) = (`left`, `right`) by its rows
    (s_i, t_i) of the (n, m) `left_steps` and `right_steps`, whose sums give the smallest inner
    product ⟨u + Σ s_i, v + Σ t_i⟩: each round adds the item that lowers it most (or raises it
    least, since exactly k are taken), scored for all candidates at once by the rank-one identity
    ⟨u + s_i, v + t_i⟩ = ⟨u, v⟩ + ⟨s_i, v⟩ + ⟨u, t_i⟩ + ⟨s_i, t_i⟩ (⟨u, v⟩ is common to all and left
    out); ties go to the lowest index."""
    _check_k(left_steps, k)
    step_products = np.einsum("ij,ij->i", left_steps, right_steps)
    u, v = np.array(left, dtype=float), np.array(right, dtype=float)
    open_ = np.ones(len(left_steps), dtype=bool)
    chosen: list[int] = []
    for _ in range(k):
        score = np.where(open_, left_steps @ v + right_steps @ u + step_products, np.inf)
        pick = int(np.argmin(score))
        chosen.append(pick)
        open_[pick] = False
        u, v = u + left_steps[pick], v + right_steps[pick]
    return _indices(chosen)


def greedy_steps(start: np.ndarray, steps: np.ndarray, k: int) -> np.ndarray:
    """Greedily k distinct rows of the (n, m) `steps` whose sum, added to `start`, has the
    smallest squared norm: `greedy_bilinear` with both vectors the same, so each round scores
    ‖v + s_i‖² = ‖v‖² + 2⟨v, s_i⟩ + ‖s_i‖² for all candidates at once; ties go to the lowest
    index."""
    return greedy_bilinear(start, start, steps, steps, k)


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


def attention_query(query: np.ndarray, etas: np.ndarray) -> np.ndarray:
    """The query q' = [η_1 q^1; …; η_H q^H] whose inner product with a key is the item's attention
    weight, ⟨key_k, q'⟩ = a_k = Σ_h η_h ⟨key_k^h, q^h⟩ (one η per head, heads as contiguous
    blocks). It fixes the sign before key-based top-k or MMR: a model's keys and queries are
    defined only up to k → Gk, q → G⁻ᵀq and a joint sign, which η̂ absorbs, so cos(key, q) ranks
    the items upside down where η̂ < 0, while cos(key, q') = sign(η̂) cos(key, q) for one head."""
    etas = np.atleast_1d(etas)
    return (query.reshape(len(etas), -1) * etas[:, None]).ravel()


def _invariant_pair(
    keys: np.ndarray,
    query: np.ndarray,
    query_key: np.ndarray,
    item_queries: np.ndarray,
    etas: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The invariant rule's two vectors and their steps: u = k_q moved by −a_i k_i, v = the
    η-weighted q_q moved by −a_i times the η-weighted q_i (see `invariant_objective`)."""
    weights = attention_query(np.ones_like(query), etas)
    attention = keys @ attention_query(query, etas)
    left_steps = -attention[:, None] * keys
    right_steps = -attention[:, None] * item_queries * weights
    return query_key, query * weights, left_steps, right_steps


def invariant_objective(
    keys: np.ndarray,
    query: np.ndarray,
    query_key: np.ndarray,
    item_queries: np.ndarray,
    etas: np.ndarray,
) -> float:
    """Σ_h η_h (k_q^h − Σ_k a_k k_k^h)ᵀ(q_q^h − Σ_k a_k q_k^h) with a_k = Σ_h η_h ⟨k_k^h, q^h⟩,
    computed directly for (n, m) item keys k_k and item queries q_k (each item's own query), the
    query token's own key k_q and its query q (= q_q): the coverage of the query measured through
    the model's own key–query form. Unlike `theory_objective` it is unchanged by k → G k,
    q → G⁻ᵀ q (per head) and by a joint sign of the queries and η, so the model's arbitrary key
    scale cannot steer it; the η_h weighting fixes the sign and weighs the heads (for one head
    with η > 0 it is η times the card's invariant form (k_q − Σ a k_k)ᵀ(q_q − Σ a q_k))."""
    u, v, left_steps, right_steps = _invariant_pair(keys, query, query_key, item_queries, etas)
    return float((u + left_steps.sum(0)) @ (v + right_steps.sum(0)))


def select_invariant(
    keys: np.ndarray,
    query: np.ndarray,
    k: int,
    query_key: np.ndarray,
    item_queries: np.ndarray,
    etas: np.ndarray,
) -> np.ndarray:
    """The invariant theory rule: greedily minimise `invariant_objective` over k items (each
    item moves both factors by a fixed step, so `greedy_bilinear` scores a round at once); the
    keys and item queries are the memory's singly cached ones (`readers.PoolKeys`)."""
    return greedy_bilinear(*_invariant_pair(keys, query, query_key, item_queries, etas), k)
