"""Class-incremental measures on constructed cases: the stream's summary, drift, and how the
loss spreads over drift bins."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from reprolab.studies.trpr.metrics import drift_quantile_losses, routing_drift, stream_summary


def test_the_summary_of_a_known_accuracy_matrix():
    matrix = np.array([[0.9, np.nan, np.nan], [0.7, 0.8, np.nan], [0.5, 0.6, 0.9]])
    summary = stream_summary(matrix)
    assert summary["average"] == pytest.approx((0.9 + 0.75 + (0.5 + 0.6 + 0.9) / 3) / 3)
    assert summary["final"] == pytest.approx((0.5 + 0.6 + 0.9) / 3)
    assert summary["forgetting"] == pytest.approx(((0.9 - 0.5) + (0.8 - 0.6)) / 2)
    unchanged = stream_summary(np.tril(np.full((3, 3), 0.6)))
    assert unchanged["forgetting"] == 0.0 and unchanged["final"] == pytest.approx(0.6)
    with pytest.raises(ValueError, match="expected"):
        stream_summary(np.zeros((2, 3)))


def test_routing_drift_is_zero_without_change_and_grows_with_it():
    then = torch.log_softmax(torch.randn(2, 6, 4, generator=torch.Generator().manual_seed(0)), -1)
    assert torch.allclose(routing_drift(then, then), torch.zeros(6))
    towards = torch.log_softmax(torch.tensor([5.0, 0.0, 0.0, 0.0]), -1).expand(2, 6, 4)
    small = routing_drift(then, torch.log_softmax(0.9 * then + 0.1 * towards, -1))
    large = routing_drift(then, torch.log_softmax(0.2 * then + 0.8 * towards, -1))
    assert torch.all(small >= 0) and torch.all(large > small)


def test_the_loss_of_a_stream_where_only_drifted_images_are_forgotten_lies_in_the_top_bin():
    drift = np.arange(10, dtype=float)
    right_then = np.ones(10, dtype=bool)
    right_now = np.array([1, 1, 1, 1, 1, 1, 1, 1, 0, 0], dtype=bool)
    spread = drift_quantile_losses(drift, right_then, right_now, bins=5)
    assert spread["edge"] == [1.0, 3.0, 5.0, 7.0, 9.0]
    assert spread["loss_rate"] == [0.0, 0.0, 0.0, 0.0, 1.0]
    assert spread["loss_share"] == [0.0, 0.0, 0.0, 0.0, 1.0]
    recovered = drift_quantile_losses(drift, right_now, np.ones(10, dtype=bool), bins=5)
    assert recovered["loss_rate"][-1] == -1.0  # images that became right count against the loss
    nothing = drift_quantile_losses(drift, right_then, right_then, bins=2)
    assert all(np.isnan(share) for share in nothing["loss_share"])
