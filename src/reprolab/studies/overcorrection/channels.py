"""The three channels by which a chosen subset S of a query's pool reaches a reader.

* icl: the items are placed in the prompt before the query, in the order chosen, and the
  reader's own forward answers. Key-based selectors rank by the reader's singly cached readout
  keys, the query sign-fixed by η̂ (`selection.attention_query`).
* rag: the same placement; what differs is the ranking: a retriever ranks the passage store by
  its own embedding (`trial.inputs`: the raw inputs x of the toy, a text retriever's embedding
  of a text trial; it knows nothing of the reader), so top-k and MMR
  run on (x, x_q). The theory rules and the oracle use the reader's keys in every channel.
* memory: the items never enter the prompt. A key-value store holds each item's readout key,
  cached when the item was seen alone with the query, and its residual value r_k = y_k −
  ŷ(∅ | x_k); a read returns ŷ(∅) + Σ_S a_k r_k with a_k = Σ_h η̂_h ⟨key_k^h, query^h⟩, the
  query's readout query with no items: an unnormalised linear read with one η̂ per head, which
  is the linear-attention reader's own readout.

Pools are stacked over B queries (equal pool sizes); `orders` (B, k) are the chosen indices.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from reprolab.studies.overcorrection.correction import head_attention_weights
from reprolab.studies.overcorrection.readers import PoolKeys, PromptReader
from reprolab.studies.overcorrection.selection import attention_query
from reprolab.studies.overcorrection.toy_world import QueryTrial

CHANNELS = ("icl", "rag", "memory")


def ranking_embedding(
    channel: str, cached: PoolKeys, trial: QueryTrial, etas: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """The (items, query) embedding that top-k and MMR rank by in this channel: the raw inputs
    for rag, the reader's cached keys and the sign-fixed query for icl and memory."""
    if channel not in CHANNELS:
        raise ValueError(f"unknown channel {channel!r}; expected one of {CHANNELS}")
    if channel == "rag":
        return trial.inputs, trial.query_inputs
    return cached.keys, attention_query(cached.query, etas)


def placed_items(
    trials: Sequence[QueryTrial], orders: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The prompts of icl and rag: each query's chosen items in the chosen order, x (B, k, d)
    and y (B, k, p), and the queries (B, d)."""
    x = np.stack([trial.x for trial in trials])
    y = np.stack([trial.y for trial in trials])
    x_query = np.stack([trial.x_query for trial in trials])
    take = orders[..., None]
    return np.take_along_axis(x, take, 1), np.take_along_axis(y, take, 1), x_query


def prompt_answers(
    reader: PromptReader, trials: Sequence[QueryTrial], orders: np.ndarray
) -> np.ndarray:
    """icl's and rag's answers (B, p): the reader's forward on the placed items."""
    return reader.predict(*placed_items(trials, orders))


@dataclass(frozen=True)
class Memory:
    """The key-value store of B queries' pools: keys (B, N, m) cached singly, values (B, N, p)
    the residuals, query (B, m) each query's readout query with no items, baseline (B, p) the
    answers ŷ(∅) with no items."""

    keys: np.ndarray
    values: np.ndarray
    query: np.ndarray
    baseline: np.ndarray


def write_memory(
    reader: PromptReader, trials: Sequence[QueryTrial], cached: Sequence[PoolKeys]
) -> Memory:
    """The store of these pools, from their cached keys (`pool_keys`, one per trial) and
    the reader's residuals r_k = y_k − ŷ(∅ | x_k)."""
    x_query = np.stack([trial.x_query for trial in trials])
    empty = np.zeros((len(trials), 0, reader.dim)), np.zeros((len(trials), 0, reader.outputs))
    return Memory(
        keys=np.stack([pool.keys for pool in cached]),
        values=np.stack([reader.residuals(trial.x, trial.y) for trial in trials]),
        query=np.stack([pool.query for pool in cached]),
        baseline=reader.predict(*empty, x_query),
    )


def memory_answers(memory: Memory, etas: np.ndarray, orders: np.ndarray) -> np.ndarray:
    """The memory's answers (B, p): ŷ(∅) + Σ_S a_k r_k over each query's chosen items, with
    a_k = Σ_h η_h ⟨key_k^h, query^h⟩ (one η per head)."""
    weights = head_attention_weights(memory.keys, memory.query, etas)
    chosen = np.take_along_axis(weights, orders, 1)
    values = np.take_along_axis(memory.values, orders[..., None], 1)
    return memory.baseline + np.einsum("bk,bkp->bp", chosen, values)
