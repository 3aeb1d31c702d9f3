"""Continual-learning scores on a hand-computed accuracy matrix (card A7.5)."""

from __future__ import annotations

import numpy as np
import pytest

from reprolab.studies.vngct.metrics import (
    average_accuracy,
    backward_transfer,
    final_accuracy,
    forgetting,
    slice_matrix,
)

# R[t, k]: accuracy on task k after training task t. Entries above the diagonal (tasks not
# yet seen) must not count; task 0's best is not its diagonal entry (R[1, 0] > R[0, 0]).
R = np.array(
    [
        [0.80, 0.10, 0.20],
        [0.85, 0.70, 0.10],
        [0.50, 0.20, 0.90],
    ]
)


def test_final_accuracy_is_the_mean_of_the_last_row():
    assert final_accuracy(R) == pytest.approx((0.50 + 0.20 + 0.90) / 3)


def test_average_accuracy_averages_the_seen_tasks_after_each_step():
    expected = (0.80 + (0.85 + 0.70) / 2 + (0.50 + 0.20 + 0.90) / 3) / 3
    assert average_accuracy(R) == pytest.approx(expected)
    assert average_accuracy(R) == pytest.approx(0.7027777777777778)


def test_backward_transfer_compares_the_end_with_just_after_learning():
    assert backward_transfer(R) == pytest.approx(((0.50 - 0.80) + (0.20 - 0.70)) / 2)
    assert backward_transfer(R) == pytest.approx(-0.4)


def test_forgetting_starts_from_each_tasks_best_accuracy():
    assert forgetting(R) == pytest.approx(((0.85 - 0.50) + (0.70 - 0.20)) / 2)
    assert forgetting(R) == pytest.approx(0.425)


def test_forgetting_skips_tasks_without_items_and_is_nan_without_any():
    sliced = R.copy()
    sliced[:, 1] = np.nan
    assert forgetting(sliced) == pytest.approx(0.85 - 0.50)
    sliced[:, 0] = np.nan
    assert np.isnan(forgetting(sliced))


def test_slice_matrix_scores_only_the_masked_items():
    masks = [np.array([True, True, False, False]), np.array([False, False, False])]
    correct = [
        [np.array([True, False, True, True]), np.array([True, True, True])],
        [np.array([True, True, False, False]), np.array([False, True, False])],
    ]
    matrix = slice_matrix(correct, masks)
    assert matrix.shape == (2, 2)
    np.testing.assert_array_equal(matrix[:, 0], [0.5, 1.0])
    assert np.isnan(matrix[:, 1]).all()
    assert forgetting(matrix) == pytest.approx(0.0)  # 0.5 → 1.0 on the one task with items


def test_slice_matrix_needs_a_mask_per_task():
    with pytest.raises(ValueError):
        slice_matrix([[np.array([True])]], [np.array([True]), np.array([True])])
