"""The channels: icl and rag place the chosen items in the prompt and differ in the ranking
embedding; the memory adds Σ a_k r_k to the empty-context answer, so a linear reader whose values
are η̂ times the residuals is its own memory."""

from __future__ import annotations

import numpy as np
import pytest

from reprolab.core.determinism import seed_everything
from reprolab.studies.overcorrection.channels import (
    memory_answers,
    placed_items,
    prompt_answers,
    ranking_embedding,
    write_memory,
)
from reprolab.studies.overcorrection.correction import head_scores
from reprolab.studies.overcorrection.readers import SoftmaxReader
from reprolab.studies.overcorrection.selection import select_top_k
from tests.studies.overcorrection.fixtures import ORDERS, TRIALS, own_memory_reader


def memory_of(reader) -> tuple:
    """The reader's cached pool keys of TRIALS and its memory of them."""
    cached = [reader.pool_keys(trial.x, trial.y, trial.x_query) for trial in TRIALS]
    return cached, write_memory(reader, TRIALS, cached)


def test_the_linear_reader_is_its_own_memory_at_its_true_scale():
    reader = own_memory_reader(-0.4)
    _, memory = memory_of(reader)
    in_prompt = prompt_answers(reader, TRIALS, ORDERS)
    np.testing.assert_allclose(memory_answers(memory, [-0.4], ORDERS), in_prompt, atol=1e-5)
    assert not np.allclose(memory_answers(memory, [-0.8], ORDERS), in_prompt, atol=1e-2)
    nothing = memory_answers(memory, [-0.4], ORDERS[:, :0])
    x_query = np.stack([trial.x_query for trial in TRIALS])
    np.testing.assert_allclose(
        nothing, reader.predict(np.zeros((5, 0, 8)), np.zeros((5, 0, 4)), x_query)
    )


def test_a_multi_head_memory_weighs_each_head_by_its_eta():
    seed_everything(0, 1)
    reader = SoftmaxReader(layers=2, hidden=16, heads=4, context=16)
    cached, memory = memory_of(reader)
    etas = np.array([0.5, -1.0, 2.0, 0.0])
    answers = memory_answers(memory, etas, ORDERS)
    for b, (trial, pool) in enumerate(zip(TRIALS, cached, strict=True)):
        scores = head_scores(pool.keys, pool.query, 4)
        values = reader.residuals(trial.x, trial.y)
        expected = memory.baseline[b] + sum(
            etas[h] * scores[k, h] * values[k] for k in ORDERS[b] for h in range(4)
        )
        np.testing.assert_allclose(answers[b], expected, rtol=1e-10)


def test_placed_items_keep_the_chosen_order():
    x, y, x_query = placed_items(TRIALS, ORDERS)
    assert x.shape == (5, 6, 8) and y.shape == (5, 6, 4) and x_query.shape == (5, 8)
    for b, trial in enumerate(TRIALS):
        assert np.array_equal(x[b], trial.x[ORDERS[b]]) and np.array_equal(y[b], trial.y[ORDERS[b]])


def test_rag_ranks_by_the_raw_inputs_and_icl_and_memory_by_the_sign_fixed_keys():
    reader = own_memory_reader(-0.4)
    trial = TRIALS[0]
    cached = reader.pool_keys(trial.x, trial.y, trial.x_query)
    items, query = ranking_embedding("rag", cached, trial, np.array([-0.4]))
    assert items is trial.x and query is trial.x_query
    for channel in ("icl", "memory"):
        items, query = ranking_embedding(channel, cached, trial, np.array([-0.4]))
        assert np.array_equal(items, cached.keys)
        flipped = select_top_k(cached.keys, -cached.query, 6)
        assert np.array_equal(select_top_k(items, query, 6), flipped)
    with pytest.raises(ValueError, match="unknown channel"):
        ranking_embedding("prompt", cached, trial, np.array([1.0]))
