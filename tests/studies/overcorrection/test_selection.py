"""Selectors return k distinct pool indices; top-k ranks by cosine and MMR with λ = 1 is top-k;
the theory rule and the oracle are greedy minimisers whose rank-one scoring matches recomputing
the objective, and the theory rule beats top-k where duplicates of the query would pile up."""

from __future__ import annotations

import numpy as np
import pytest

from reprolab.studies.overcorrection.correction import error, readout, residual_values
from reprolab.studies.overcorrection.selection import (
    cosine_similarities,
    greedy_steps,
    select_mmr,
    select_none,
    select_oracle,
    select_random,
    select_theory,
    select_top_k,
    theory_objective,
)
from reprolab.studies.overcorrection.toy_world import make_world

ETA = 0.5
WORLD = make_world(np.random.default_rng(3), 8)


def selectors(trial, k):
    """Every selector's choice of k items for a toy trial."""
    keys, query = trial.x, trial.x_query
    values = residual_values(trial.x, trial.y, WORLD.prior)
    error0 = WORLD.prior @ query - trial.y_query
    return {
        "random": select_random(keys, query, k, np.random.default_rng(0)),
        "top_k": select_top_k(keys, query, k),
        "mmr": select_mmr(keys, query, k, 0.5),
        "theory": select_theory(keys, query, k, ETA),
        "oracle": select_oracle(keys, query, k, values, error0, ETA),
    }


@pytest.mark.parametrize("k", [0, 1, 6, 60])
def test_selectors_return_k_distinct_indices_of_the_pool(k):
    for trial in WORLD.trials[:3]:
        for name, chosen in selectors(trial, k).items():
            assert chosen.dtype == np.int64 and chosen.shape == (k,), name
            assert len(set(chosen.tolist())) == k and np.all((0 <= chosen) & (chosen < 60)), name
    assert select_none(WORLD.trials[0].x, WORLD.trials[0].x_query, 6).shape == (0,)


def test_selectors_refuse_a_k_larger_than_the_pool():
    keys, query = np.eye(3), np.ones(3)
    with pytest.raises(ValueError, match="k=4"):
        select_top_k(keys, query, 4)
    with pytest.raises(ValueError, match="k=-1"):
        select_theory(keys, query, -1, ETA)
    with pytest.raises(ValueError, match="lambda"):
        select_mmr(keys, query, 2, 1.5)


def test_random_selection_is_seeded():
    keys, query = WORLD.trials[0].x, WORLD.trials[0].x_query
    first = select_random(keys, query, 6, np.random.default_rng(11))
    again = select_random(keys, query, 6, np.random.default_rng(11))
    other = select_random(keys, query, 6, np.random.default_rng(12))
    assert np.array_equal(first, again) and not np.array_equal(first, other)


def test_top_k_ranks_by_cosine_not_inner_product():
    keys = np.array([[10.0, 10.0], [0.5, 0.0], [-1.0, 1.0], [0.0, 0.0]])
    assert np.array_equal(select_top_k(keys, np.array([1.0, 0.0]), 4), [1, 0, 3, 2])
    assert cosine_similarities(keys, np.array([1.0, 0.0]))[3] == 0.0


def test_mmr_with_lambda_one_is_top_k_by_cosine():
    for trial in WORLD.trials:
        for k in (1, 6, 12):
            mmr = select_mmr(trial.x, trial.x_query, k, lam=1.0)
            assert np.array_equal(mmr, select_top_k(trial.x, trial.x_query, k))
    tied = np.array([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0], [2.0, 0.0]])
    assert np.array_equal(select_mmr(tied, np.array([1.0, 0.0]), 4, 1.0), [0, 1, 3, 2])
    assert np.array_equal(select_top_k(tied, np.array([1.0, 0.0]), 4), [0, 1, 3, 2])


def test_mmr_passes_over_a_copy_of_what_it_already_has():
    keys = np.array([[1.0, 0.1], [1.0, 0.1], [1.0, -0.3]])
    assert np.array_equal(select_mmr(keys, np.array([1.0, 0.0]), 2, 0.5), [0, 2])


def brute_greedy(objective, n: int, k: int) -> list[int]:
    """Greedy by recomputing `objective(indices)` for every candidate, lowest index on ties."""
    chosen: list[int] = []
    for _ in range(k):
        scores = [objective(chosen + [i]) if i not in chosen else np.inf for i in range(n)]
        chosen.append(int(np.argmin(scores)))
    return chosen


@pytest.mark.parametrize("index", range(4))
def test_rank_one_greedy_matches_recomputing_the_objectives(index):
    trial = WORLD.trials[index]
    keys, query = trial.x, trial.x_query
    theory = brute_greedy(lambda s: theory_objective(keys[s], query, ETA), 60, 12)
    assert select_theory(keys, query, 12, ETA).tolist() == theory
    values = residual_values(trial.x, trial.y, WORLD.prior)
    baseline = WORLD.prior @ query

    def true_error(s):
        answer = readout(baseline, keys[s], query, values[s], ETA)
        return float(np.sum(error(answer, trial.y_query) ** 2))

    oracle = select_oracle(keys, query, 12, values, baseline - trial.y_query, ETA)
    assert oracle.tolist() == brute_greedy(true_error, 60, 12)


def test_theory_objective_falls_at_every_step_on_an_orthonormal_pool():
    query = np.random.default_rng(5).standard_normal(8)
    keys = 1.2 * np.eye(8)
    chosen = select_theory(keys, query, 8, ETA)
    path = [theory_objective(keys[chosen[:j]], query, ETA) for j in range(9)]
    assert np.all(np.diff(path) < 0)
    assert path[0] == pytest.approx(query @ query)
    assert chosen.tolist() == np.argsort(-np.abs(query), kind="stable").tolist()


def test_greedy_still_takes_k_items_when_every_step_raises_the_objective():
    query = np.array([1.0, 0.0])
    keys = np.array([[3.0, 0.0], [3.0, 0.0]])
    chosen = select_theory(keys, query, 2, ETA)
    assert chosen.tolist() == [0, 1]
    assert theory_objective(keys[:1], query, ETA) > theory_objective(keys[:0], query, ETA)
    assert greedy_steps(np.zeros(2), np.zeros((3, 2)), 0).shape == (0,)


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5, 6])
def test_theory_is_never_worse_than_top_k_when_copies_of_the_query_pile_up(k):
    query = np.eye(8)[0]
    keys = np.concatenate([np.tile(query, (6, 1)), np.eye(8)[1:]])
    theory = theory_objective(keys[select_theory(keys, query, k, ETA)], query, ETA)
    top_k = theory_objective(keys[select_top_k(keys, query, k)], query, ETA)
    assert top_k == pytest.approx((1 - ETA * k) ** 2)
    assert theory <= top_k
    assert theory == pytest.approx(0.25 if k == 1 else 0.0)


def test_theory_first_pick_is_never_worse_than_the_most_similar_item():
    for trial in WORLD.trials:
        keys, query = trial.x, trial.x_query
        theory = theory_objective(keys[select_theory(keys, query, 1, ETA)], query, ETA)
        assert theory <= theory_objective(keys[select_top_k(keys, query, 1)], query, ETA)
