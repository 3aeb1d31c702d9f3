"""η̂: the attention scale that makes the linear theory Δ = Σ_k a_k r_k, a_k = η ⟨key_k, query⟩,
match a trained reader's corrections.

A reader's keys and queries carry an arbitrary scale (and sign), so η is not read off its weights
but fitted by least squares: on tuning prompts of the training distribution, the measured
corrections Δ = ŷ(S) − ŷ(∅) are regressed on the theory's regressors u = Σ_k ⟨key_k, query⟩ r_k,
with the readout keys and query of each prompt and the items' residuals r_k = y_k − ŷ(∅ | x_k).
`fit_eta` fits one η for the whole key (the card's theory; all heads concatenated),
`fit_head_etas` one per head (Δ ≈ Σ_h η_h u_h). Both pool every (prompt, coordinate) pair into
one regression without an intercept.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

from reprolab.studies.overcorrection.correction import head_scores
from reprolab.studies.overcorrection.icl_data import training_prompts
from reprolab.studies.overcorrection.readers import PromptReader


def head_regressors(
    keys: np.ndarray, query: np.ndarray, residuals: np.ndarray, heads: int
) -> np.ndarray:
    """The theory's regressors u_h = Σ_k ⟨key_k^h, query^h⟩ r_k of (B, n, m) keys, (B, m)
    queries and (B, n, p) residuals, (B, p, heads)."""
    return np.einsum("bnh,bnp->bph", head_scores(keys, query, heads), residuals)


def fit_head_etas(regressors: np.ndarray, deltas: np.ndarray) -> np.ndarray:
    """Per-head η̂ (heads,): least squares of the (B, p) corrections on the (B, p, heads)
    regressors, pooled over prompts and coordinates."""
    heads = regressors.shape[-1]
    solution, *_ = np.linalg.lstsq(regressors.reshape(-1, heads), deltas.ravel(), rcond=None)
    return solution


def fit_eta(regressors: np.ndarray, deltas: np.ndarray) -> float:
    """One η̂ for all heads together: the least-squares scale of Δ on Σ_h u_h = Σ_k ⟨key_k,
    query⟩ r_k, the inner product over the concatenated heads."""
    return float(fit_head_etas(regressors.sum(-1, keepdims=True), deltas)[0])


def tuning_sample(
    reader: PromptReader,
    rng: np.random.Generator,
    prior: np.ndarray,
    sigma: float,
    noise: float,
    sizes: Iterable[int],
    per_size: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Regressors (B, p, heads) and measured corrections (B, p) of `per_size` training prompts
    for each context size in `sizes` (drawn in that order): what η̂ is fitted on."""
    batches = (training_prompts(rng, prior, per_size, n, sigma, noise)[:3] for n in sizes)
    return prompt_sample(reader, batches)


def prompt_sample(
    reader: PromptReader, batches: Iterable[tuple[np.ndarray, np.ndarray, np.ndarray]]
) -> tuple[np.ndarray, np.ndarray]:
    """Regressors (B, p, heads) and measured corrections Δ = ŷ(S) − ŷ(∅) (B, p) of batches of
    prompts (x (B, n, d), y (B, n, p), x_query (B, d))."""
    regressors, deltas = [], []
    for x, y, x_query in batches:
        keys, query = reader.readout_keys_queries(x, y, x_query)
        residuals = reader.residuals(x, y)
        regressors.append(head_regressors(keys, query, residuals, reader.heads))
        answers = reader.predict(x, y, x_query)
        deltas.append(answers - reader.predict(x[:, :0], y[:, :0], x_query))
    return np.concatenate(regressors), np.concatenate(deltas)
