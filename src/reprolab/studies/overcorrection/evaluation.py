"""One trained reader measured on one seed's shifted world: for every channel, selector and k,
the error of its answers, the over- and under-correction rates and the R² of the theory's
predicted correction against the measured one.

* Calibration: η̂ is fitted per head on fresh prompts of the reader's *training* distribution
  (`eta.tuning_sample`; no test query, no label of the shifted world), together with one pooled
  η̂ for the card's literal rule. The per-head fit's R² says how linear the reader's readout is.
* Selectors (each orders the first K = max(ks) items; the set for a smaller k is the first k of
  them, which is what a greedy or ranked rule picks at that k):
  - `none`; `random` (one uniform permutation per query, shared by every channel);
  - `top_k` and `mmr` (λ from the tuning record) on the channel's ranking embedding
    (`channels.ranking_embedding`: the reader's cached keys for icl and memory, raw inputs for
    rag);
  - `theory_literal`: the card's rule ‖(I − η̂ Σ key keyᵀ) query‖² on the reader's cached keys
    with the pooled η̂; `theory_invariant`: the rule through the reader's own key–query form
    (`selection.select_invariant`), per-head η̂; `theory_inputs`: the card's rule on the raw
    inputs, ‖x_q − Σ_S a_k x_k‖² with the reader's attention weights a_k (per-head η̂, cached
    keys); `theory`: whichever of the three the tuning record chose for this reader and channel;
  - `oracle` (reads y*): greedily the items that make the answer's true error smallest, by the
    reader's own answers for icl and rag (one batched forward per round) and exactly for memory.
* The theory's prediction of a correction: Σ_h η̂_h Σ_k ⟨key_k^h, query^h⟩ r_k with the keys and
  query of the prompt as placed (icl, rag) and the residuals r_k = y_k − ŷ(∅ | x_k); for memory
  the read is that form itself.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from reprolab.studies.overcorrection.channels import (
    Memory,
    memory_answers,
    placed_items,
    prompt_answers,
    ranking_embedding,
    write_memory,
)
from reprolab.studies.overcorrection.correction import (
    head_attention_weights,
    overshoot,
    r_squared,
)
from reprolab.studies.overcorrection.eta import (
    fit_eta,
    fit_head_etas,
    head_regressors,
    tuning_sample,
)
from reprolab.studies.overcorrection.readers import PoolKeys, PromptReader
from reprolab.studies.overcorrection.selection import (
    greedy_steps,
    select_invariant,
    select_mmr,
    select_theory,
    select_top_k,
)
from reprolab.studies.overcorrection.toy_world import QueryTrial

THEORY_RULES = ("theory_literal", "theory_invariant", "theory_inputs")
SELECTORS = ("none", "random", "top_k", "mmr", *THEORY_RULES, "theory", "oracle")


@dataclass(frozen=True)
class Calibration:
    """η̂ of a reader: per head (`etas`), pooled over the heads (`eta`, the card's literal
    theory) and the R² of the per-head fit on the calibration prompts."""

    etas: np.ndarray
    eta: float
    r2: float


def calibrate(
    reader: PromptReader,
    prior: np.ndarray,
    task: Mapping[str, Any],
    calibration: Mapping[str, Any],
    rng: np.random.Generator,
) -> Calibration:
    """Fit η̂ on `calibration.prompts` training prompts per context size 1..`task.n_max`."""
    regressors, deltas = tuning_sample(
        reader,
        rng,
        prior,
        task["sigma"],
        task["noise"],
        range(1, task["n_max"] + 1),
        calibration["prompts"],
    )
    return fit_calibration(regressors, deltas)


def fit_calibration(regressors: np.ndarray, deltas: np.ndarray) -> Calibration:
    """η̂ per head and pooled, fitted on calibration prompts' (B, p, heads) regressors and
    (B, p) measured corrections, with the per-head fit's R²."""
    etas = fit_head_etas(regressors, deltas)
    return Calibration(etas, fit_eta(regressors, deltas), r_squared(regressors @ etas, deltas))


@dataclass(frozen=True)
class Queries:
    """A seed's test queries with what every selector and channel reads: their pools, each
    pool's cached readout keys, the memory of the pools, the truths y* (B, p) and the answers
    with no information ŷ(∅) (B, p)."""

    trials: tuple[QueryTrial, ...]
    cached: list[PoolKeys]
    memory: Memory
    truths: np.ndarray
    baseline: np.ndarray

    @property
    def errors(self) -> np.ndarray:
        """e₀ = ŷ(∅) − y* per query, (B, p)."""
        return self.baseline - self.truths


def prepare(reader: PromptReader, trials: Sequence[QueryTrial]) -> Queries:
    """Cache every pool's keys and write the memory."""
    cached = [reader.pool_keys(trial.x, trial.y, trial.x_query) for trial in trials]
    memory = write_memory(reader, trials, cached)
    truths = np.stack([trial.y_query for trial in trials])
    return Queries(tuple(trials), cached, memory, truths, memory.baseline)


def attention(pool: PoolKeys, calibration: Calibration) -> np.ndarray:
    """The reader's attention weights a_k of a pool's items (cached keys, per-head η̂)."""
    return head_attention_weights(pool.keys, pool.query, calibration.etas)


def model_oracle(reader: PromptReader, queries: Queries, count: int) -> np.ndarray:
    """The icl/rag oracle: per round, every query's every open item appended to its chosen ones,
    all answered in one batch, and the item of smallest true squared error taken; (B, count)."""
    trials = queries.trials
    size = len(trials[0].x)
    chosen = np.zeros((len(trials), 0), dtype=np.int64)
    for _ in range(count):
        candidates = np.arange(size)[None, :, None].repeat(len(trials), 0)
        orders = np.concatenate([np.repeat(chosen[:, None], size, 1), candidates], axis=2).reshape(
            len(trials) * size, -1
        )
        expanded = [trial for trial in trials for _ in range(size)]
        answers = prompt_answers(reader, expanded, orders).reshape(len(trials), size, -1)
        errors = ((answers - queries.truths[:, None]) ** 2).sum(-1)
        taken = np.zeros_like(errors, dtype=bool)
        np.put_along_axis(taken, chosen, True, 1)
        best = np.where(taken, np.inf, errors).argmin(1)
        chosen = np.concatenate([chosen, best[:, None]], 1)
    return chosen


def selection_key(selector: str, channel: str, tuned: Mapping[str, Any]) -> tuple:
    """What a selector's choice depends on, so that channels that would choose the same items
    share one selection: the ranking space of top-k and MMR (the raw inputs in rag, the reader's
    keys in icl and memory) and MMR's λ; for the oracle, whether answers come from the prompt or
    from the memory; for the others nothing but the rule (`theory` resolved to the tuned one)."""
    if selector == "theory":
        selector = tuned["rule"]
    if selector in ("top_k", "mmr"):
        space = "inputs" if channel == "rag" else "keys"
    elif selector == "oracle":
        space = "memory" if channel == "memory" else "prompt"
    else:
        space = None
    return selector, space, tuned["lam"] if selector == "mmr" else None


def select(
    selector: str,
    channel: str,
    reader: PromptReader,
    queries: Queries,
    calibration: Calibration,
    count: int,
    tuned: Mapping[str, Any],
    permutations: np.ndarray,
) -> np.ndarray:
    """The first `count` items every query's selector picks in this channel, (B, count)
    (module docstring); `tuned` holds MMR's `lam` and the theory's `rule`."""
    if selector == "theory":
        selector = tuned["rule"]
    if selector == "none":
        return np.zeros((len(queries.trials), 0), dtype=np.int64)
    if selector == "random":
        return permutations[:, :count]
    if selector == "oracle" and channel != "memory":
        return model_oracle(reader, queries, count)
    rows = []
    for index, (trial, pool) in enumerate(zip(queries.trials, queries.cached, strict=True)):
        if selector in ("top_k", "mmr"):
            keys, query = ranking_embedding(channel, pool, trial, calibration.etas)
            rows.append(
                select_top_k(keys, query, count)
                if selector == "top_k"
                else select_mmr(keys, query, count, tuned["lam"])
            )
        elif selector == "theory_literal":
            rows.append(select_theory(pool.keys, pool.query, count, calibration.eta))
        elif selector == "theory_invariant":
            rows.append(
                select_invariant(
                    pool.keys,
                    pool.query,
                    count,
                    pool.query_key,
                    pool.item_queries,
                    calibration.etas,
                )
            )
        elif selector == "theory_inputs":
            steps = -attention(pool, calibration)[:, None] * trial.inputs
            rows.append(greedy_steps(trial.query_inputs, steps, count))
        elif selector == "oracle":
            steps = attention(pool, calibration)[:, None] * queries.memory.values[index]
            rows.append(greedy_steps(queries.errors[index], steps, count))
        else:
            raise ValueError(f"unknown selector {selector!r}; expected one of {SELECTORS}")
    return np.stack(rows)


def answer(
    channel: str,
    reader: PromptReader,
    queries: Queries,
    calibration: Calibration,
    orders: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """The channel's answers (B, p) with the chosen items, and the theory's predicted
    corrections (B, p) (module docstring)."""
    if channel == "memory":
        answers = memory_answers(queries.memory, calibration.etas, orders)
        return answers, answers - queries.baseline
    answers = prompt_answers(reader, queries.trials, orders)
    if orders.shape[1] == 0:
        return answers, np.zeros_like(answers)
    x, y, x_query = placed_items(queries.trials, orders)
    keys, query = reader.readout_keys_queries(x, y, x_query)
    regressors = head_regressors(keys, query, reader.residuals(x, y), reader.heads)
    return answers, regressors @ calibration.etas


def overshoots(deltas: np.ndarray, errors: np.ndarray) -> np.ndarray:
    """Each query's overshoot κ of its (B, p) correction against its (B, p) error e₀."""
    return np.array([overshoot(d, e) for d, e in zip(deltas, errors, strict=True)], dtype=float)


def measures(
    answers: np.ndarray,
    predicted: np.ndarray,
    queries: Queries,
    thresholds: Mapping[str, float],
) -> tuple[dict[str, float], np.ndarray]:
    """MSE per answer coordinate against y*, the over- and under-correction rates, the R² of
    predicted against measured corrections (nan when nothing was corrected), and every query's
    overshoot κ."""
    deltas = answers - queries.baseline
    kappas = overshoots(deltas, queries.errors)
    return {
        "mse": float(np.mean((answers - queries.truths) ** 2)),
        "over": float(np.mean(kappas > thresholds["over"])),
        "under": float(np.mean(kappas < thresholds["under"])),
        "r2": r_squared(predicted, deltas) if np.any(deltas) else float("nan"),
    }, kappas
