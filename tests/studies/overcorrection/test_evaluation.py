"""The evaluation of one reader: selectors, channels, the theory's prediction and the measures,
checked on a linear reader that is its own memory (its readout is exactly the theory's)."""

from __future__ import annotations

import numpy as np
import pytest

from reprolab.studies.overcorrection.evaluation import (
    Calibration,
    answer,
    measures,
    model_oracle,
    prepare,
    select,
)
from tests.studies.overcorrection.fixtures import TRIALS, own_memory_reader

ETA = -0.4
THRESHOLDS = {"under": 0.5, "over": 1.5}
EXACT = Calibration(np.array([ETA]), ETA, 1.0)
TUNED = {"lam": 0.5, "rule": "theory_invariant"}


@pytest.fixture(scope="module")
def prepared():
    reader = own_memory_reader(ETA)
    queries = prepare(reader, TRIALS)
    permutations = np.stack([np.random.default_rng(i).permutation(20) for i in range(5)])
    return reader, queries, permutations


def orders_of(selector: str, channel: str, prepared, count: int = 6) -> np.ndarray:
    reader, queries, permutations = prepared
    return select(selector, channel, reader, queries, EXACT, count, TUNED, permutations)


def test_the_model_oracle_picks_what_the_exact_memory_oracle_picks(prepared):
    reader, queries, _ = prepared
    np.testing.assert_array_equal(
        model_oracle(reader, queries, 4), orders_of("oracle", "memory", prepared, 4)
    )


def test_the_theory_row_is_the_rule_tuning_chose(prepared):
    np.testing.assert_array_equal(
        orders_of("theory", "icl", prepared), orders_of("theory_invariant", "icl", prepared)
    )
    assert not np.array_equal(
        orders_of("theory", "icl", prepared), orders_of("theory_inputs", "icl", prepared)
    )


def test_random_orders_are_the_shared_permutations_and_none_is_empty(prepared):
    _, _, permutations = prepared
    np.testing.assert_array_equal(orders_of("random", "rag", prepared, 3), permutations[:, :3])
    assert orders_of("none", "icl", prepared).shape == (5, 0)


def test_rag_ranks_by_the_inputs_and_icl_by_the_readers_keys(prepared):
    assert not np.array_equal(
        orders_of("top_k", "rag", prepared), orders_of("top_k", "icl", prepared)
    )
    np.testing.assert_array_equal(
        orders_of("top_k", "icl", prepared), orders_of("top_k", "memory", prepared)
    )


@pytest.mark.parametrize("channel", ["icl", "rag", "memory"])
def test_the_theory_predicts_the_linear_readers_correction_exactly(prepared, channel):
    reader, queries, _ = prepared
    answers, predicted = answer(
        channel, reader, queries, EXACT, orders_of("top_k", channel, prepared)
    )
    np.testing.assert_allclose(predicted, answers - queries.baseline, atol=1e-5)
    cell, kappas = measures(answers, predicted, queries, THRESHOLDS)
    assert cell["r2"] > 0.9999
    assert cell["over"] == pytest.approx(np.mean(kappas > 1.5))
    assert cell["under"] == pytest.approx(np.mean(kappas < 0.5))
    assert cell["mse"] == pytest.approx(np.mean((answers - queries.truths) ** 2))


def test_no_information_is_a_full_under_correction_without_an_r2(prepared):
    reader, queries, _ = prepared
    answers, predicted = answer("icl", reader, queries, EXACT, orders_of("none", "icl", prepared))
    np.testing.assert_allclose(answers, queries.baseline)
    cell, kappas = measures(answers, predicted, queries, THRESHOLDS)
    assert cell["under"] == 1.0 and cell["over"] == 0.0 and np.isnan(cell["r2"])
    np.testing.assert_array_equal(kappas, 0.0)


def test_an_unknown_selector_is_named(prepared):
    with pytest.raises(ValueError, match="'nearest'"):
        orders_of("nearest", "icl", prepared)
