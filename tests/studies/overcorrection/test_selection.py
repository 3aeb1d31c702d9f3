"""Selectors return k distinct pool indices; top-k ranks by cosine and MMR with λ = 1 is top-k;
the theory rule and the oracle are greedy minimisers whose rank-one scoring matches recomputing
the objective, and the theory rule beats top-k where duplicates of the query would pile up."""

from __future__ import annotations

import numpy as np
import pytest

from reprolab.studies.overcorrection.correction import (
    error,
    head_attention_weights,
    readout,
    residual_values,
)
from reprolab.studies.overcorrection.selection import (
    attention_query,
    cosine_similarities,
    greedy_bilinear,
    greedy_steps,
    invariant_objective,
    select_invariant,
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


def model_pool(seed: int, heads: int = 1, width: int = 8):
    """A pool as a model would cache it: (20, width) item keys and item queries, the query token's
    own key and its query."""
    rng = np.random.default_rng(seed)
    keys, item_queries = rng.standard_normal((2, 20, width)) / np.sqrt(width)
    query_key, query = rng.standard_normal((2, width)) / np.sqrt(width)
    return keys, query, query_key, item_queries


def test_greedy_bilinear_matches_recomputing_the_inner_product():
    rng = np.random.default_rng(9)
    left, right = rng.standard_normal((2, 5))
    left_steps, right_steps = rng.standard_normal((2, 15, 5))

    def product(s):
        return float((left + left_steps[s].sum(0)) @ (right + right_steps[s].sum(0)))

    chosen = greedy_bilinear(left, right, left_steps, right_steps, 8)
    assert chosen.tolist() == brute_greedy(product, 15, 8)


@pytest.mark.parametrize(("heads", "etas"), [(1, [0.7]), (1, [-0.7]), (4, [0.5, -1.0, 2.0, 0.3])])
def test_the_invariant_rule_greedily_minimises_its_objective(heads, etas):
    keys, query, query_key, item_queries = model_pool(heads, heads)
    etas = np.array(etas)

    def objective(s):
        return invariant_objective(keys[s], query, query_key, item_queries[s], etas)

    chosen = select_invariant(keys, query, 10, query_key, item_queries, etas)
    assert chosen.tolist() == brute_greedy(objective, 20, 10)


def test_the_invariant_objective_is_eta_times_the_cards_invariant_form():
    keys, query, query_key, item_queries = model_pool(1)
    s = [3, 7, 11]
    a = 0.6 * keys[s] @ query
    form = (query_key - a @ keys[s]) @ (query - a @ item_queries[s])
    got = invariant_objective(keys[s], query, query_key, item_queries[s], np.array([0.6]))
    assert got == pytest.approx(0.6 * form)


@pytest.mark.parametrize("scale", [0.2, 3.0])
def test_rescaling_keys_against_queries_moves_the_cards_rule_but_not_the_invariant_one(scale):
    keys, query, query_key, item_queries = model_pool(5)
    eta = np.array([0.8])
    rescaled = (scale * keys, query / scale, scale * query_key, item_queries / scale)
    base = select_invariant(keys, query, 8, query_key, item_queries, eta)
    assert np.array_equal(select_invariant(rescaled[0], rescaled[1], 8, *rescaled[2:], eta), base)
    assert invariant_objective(*rescaled, eta) == pytest.approx(
        invariant_objective(keys, query, query_key, item_queries, eta)
    )
    literal = select_theory(keys, query, 8, 0.8)
    assert not np.array_equal(select_theory(rescaled[0], rescaled[1], 8, 0.8), literal)


def test_the_invariant_rule_ignores_a_general_key_basis_per_head_and_a_joint_sign():
    keys, query, query_key, item_queries = model_pool(6, heads=2)
    etas = np.array([0.9, -0.4])
    base = select_invariant(keys, query, 8, query_key, item_queries, etas)
    rng = np.random.default_rng(7)
    bases = [rng.standard_normal((4, 4)) + 2 * np.eye(4) for _ in range(2)]

    def transform(vectors, inverse):
        """Each head's block by G_h (keys) or G_h⁻ᵀ (queries)."""
        blocks = np.split(vectors, 2, axis=-1)
        maps = [np.linalg.inv(g).T if inverse else g for g in bases]
        return np.concatenate([b @ m.T for b, m in zip(blocks, maps, strict=True)], -1)

    moved = (transform(keys, False), transform(query, True), transform(query_key, False))
    moved_queries = transform(item_queries, True)
    assert np.array_equal(select_invariant(*moved[:2], 8, moved[2], moved_queries, etas), base)
    flipped = select_invariant(keys, -query, 8, query_key, -item_queries, -etas)
    assert np.array_equal(flipped, base)


def test_the_invariant_rule_on_a_rescaled_linear_model_is_the_cards_rule_on_its_inputs():
    for trial in WORLD.trials[:4]:
        x, x_query = trial.x, trial.x_query
        raw = select_theory(x, x_query, 12, ETA)
        for scale in (0.3, 4.0):
            model = select_invariant(
                scale * x, x_query / scale, 12, scale * x_query, x / scale, np.array([ETA])
            )
            assert np.array_equal(model, raw)


def test_the_attention_query_fixes_the_sign_and_gives_the_attention_weights():
    keys, query, _, _ = model_pool(8, heads=2)
    assert np.array_equal(
        select_top_k(keys, attention_query(query, -0.5), 6), select_top_k(keys, -query, 6)
    )
    assert np.array_equal(
        select_mmr(keys, attention_query(query, 0.5), 6), select_mmr(keys, query, 6)
    )
    etas = np.array([2.0, -3.0])
    np.testing.assert_allclose(
        keys @ attention_query(query, etas), head_attention_weights(keys, query, etas)
    )
