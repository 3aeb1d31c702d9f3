"""The readout theory: the closed-form correction is the linear-attention readout's, the overshoot
labels split at their thresholds, and R² is pooled over queries and coordinates."""

from __future__ import annotations

import numpy as np
import pytest

from reprolab.studies.overcorrection.correction import (
    attention_weights,
    closed_form_correction,
    correction,
    correction_label,
    error,
    head_attention_weights,
    head_scores,
    label_rates,
    overshoot,
    r_squared,
    readout,
    residual_values,
)

ETA = 0.5


def linear_world(seed: int, n: int, dim: int = 8, outputs: int = 4):
    rng = np.random.default_rng(seed)
    prior, truth = rng.standard_normal((2, outputs, dim))
    x = rng.standard_normal((n, dim)) / np.sqrt(dim)
    x_query = rng.standard_normal(dim) / np.sqrt(dim)
    return rng, prior, truth, x, x_query


def test_attention_weights_are_eta_times_key_query_inner_products():
    keys = np.array([[1.0, 0.0], [2.0, 3.0], [0.0, 0.0]])
    assert np.array_equal(attention_weights(keys, np.array([1.0, -1.0]), 0.5), [0.5, -0.5, 0.0])


@pytest.mark.parametrize("n", [0, 1, 5, 60])
def test_closed_form_correction_is_the_noiseless_readouts(n):
    _, prior, truth, x, x_query = linear_world(n, n)
    values = residual_values(x, x @ truth.T, prior)
    baseline = prior @ x_query
    answer = readout(baseline, x, x_query, values, ETA)
    closed = closed_form_correction(prior, truth, x, x_query, ETA)
    np.testing.assert_allclose(answer - baseline, closed, rtol=1e-12, atol=1e-14)
    expected_error = (prior - truth) @ (np.eye(x.shape[1]) - ETA * x.T @ x) @ x_query
    np.testing.assert_allclose(error(answer, truth @ x_query), expected_error, atol=1e-12)


def test_noisy_items_move_the_correction_by_their_attended_noise():
    rng, prior, truth, x, x_query = linear_world(7, 12)
    noise = 0.3 * rng.standard_normal((12, 4))
    measured = correction(x, x_query, residual_values(x, x @ truth.T + noise, prior), ETA)
    gap = measured - closed_form_correction(prior, truth, x, x_query, ETA)
    np.testing.assert_allclose(gap, attention_weights(x, x_query, ETA) @ noise, atol=1e-12)


def test_an_empty_item_set_corrects_nothing():
    delta = correction(np.zeros((0, 3)), np.ones(3), np.zeros((0, 2)), ETA)
    assert delta.shape == (2,) and not delta.any()


@pytest.mark.parametrize(
    ("scale", "kappa", "label"),
    [
        (1.0, 1.0, "proper"),
        (2.0, 2.0, "over"),
        (0.0, 0.0, "under"),
        (-1.0, -1.0, "under"),
        (1.5, 1.5, "proper"),
        (0.5, 0.5, "proper"),
        (0.3, 0.3, "under"),
        (1.6, 1.6, "over"),
    ],
)
def test_overshoot_and_labels_on_scaled_error_vectors(scale, kappa, label):
    error0 = np.array([1.0, -2.0, 0.5])
    assert overshoot(-scale * error0, error0) == pytest.approx(kappa)
    assert correction_label(overshoot(-scale * error0, error0)) == label


def test_overshoot_projects_on_the_error_direction_and_labels_take_thresholds():
    error0 = np.array([2.0, 0.0])
    assert overshoot(np.array([-3.0, 5.0]), error0) == pytest.approx(1.5)
    assert overshoot(np.array([-2.0]), np.array([1.0])) == pytest.approx(2.0)
    assert correction_label(2.0, lower=0.8, upper=2.5) == "proper"
    assert correction_label(0.7, lower=0.8, upper=2.5) == "under"
    assert correction_label(1.2, lower=0.9, upper=1.1) == "over"


def test_no_error_gives_a_nan_overshoot_that_has_no_label():
    assert np.isnan(overshoot(np.array([1.0, 0.0]), np.zeros(2)))
    with pytest.raises(ValueError, match="nan overshoot"):
        correction_label(float("nan"))
    with pytest.raises(ValueError, match="lower <= upper"):
        correction_label(1.0, lower=2.0, upper=1.0)


def test_label_rates_are_shares_of_the_labels():
    rates = label_rates(np.array([0.1, 1.0, 1.2, 3.0]))
    assert rates == {"under": 0.25, "proper": 0.5, "over": 0.25}
    with pytest.raises(ValueError, match="at least one"):
        label_rates(np.array([]))


def test_r_squared_is_one_for_a_perfect_prediction_and_at_most_zero_for_a_constant():
    measured = np.random.default_rng(0).standard_normal((30, 4))
    assert r_squared(measured.copy(), measured) == pytest.approx(1.0)
    assert r_squared(np.full_like(measured, measured.mean()), measured) == pytest.approx(0.0)
    for constant in (-1.0, 0.0, 0.7):
        assert r_squared(np.full_like(measured, constant), measured) <= 0.0


def test_r_squared_pools_coordinates_around_the_grand_mean():
    measured = np.random.default_rng(1).standard_normal((50, 2)) + np.array([5.0, -5.0])
    per_coordinate_means = np.broadcast_to(measured.mean(axis=0), measured.shape)
    assert r_squared(per_coordinate_means, measured) > 0.9
    assert np.isnan(r_squared(np.zeros((3, 2)), np.ones((3, 2))))
    with pytest.raises(ValueError, match="matching shapes"):
        r_squared(np.zeros((3, 2)), np.zeros((2, 3)))


def test_head_scores_split_the_width_into_contiguous_heads():
    rng = np.random.default_rng(2)
    keys, query = rng.standard_normal((3, 5, 6)), rng.standard_normal((3, 6))
    scores = head_scores(keys, query, 3)
    assert scores.shape == (3, 5, 3)
    np.testing.assert_allclose(scores[1, 4, 2], keys[1, 4, 4:] @ query[1, 4:])
    np.testing.assert_allclose(scores.sum(-1), np.einsum("bnm,bm->bn", keys, query))
    np.testing.assert_allclose(head_scores(keys[0], query[0], 1)[:, 0], keys[0] @ query[0])
    with pytest.raises(ValueError, match="4 heads"):
        head_scores(keys, query, 4)


def test_head_attention_weights_with_one_head_are_the_single_scale_weights():
    rng = np.random.default_rng(3)
    keys, query = rng.standard_normal((7, 4)), rng.standard_normal(4)
    np.testing.assert_allclose(
        head_attention_weights(keys, query, 0.5), attention_weights(keys, query, 0.5)
    )
    etas = np.array([2.0, -1.0])
    by_hand = 2.0 * keys[:, :2] @ query[:2] - keys[:, 2:] @ query[2:]
    np.testing.assert_allclose(head_attention_weights(keys, query, etas), by_hand)
