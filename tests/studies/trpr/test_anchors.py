"""Class anchors: the end-of-task mean, the card's moving average, the soft mixture at
inference (the hard anchor as the temperature falls) and task identification."""

from __future__ import annotations

import pytest
import torch

from reprolab.studies.trpr.anchors import (
    anchor_weights,
    ema_anchor,
    mean_anchor,
    soft_anchor,
    task_identification,
)


def log_routes(blocks: int, images: int, experts: int, seed: int) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    return torch.log_softmax(torch.randn(blocks, images, experts, generator=generator), -1)


def test_the_mean_anchor_is_the_mean_routing_and_a_distribution():
    routes = log_routes(2, 30, 4, 0)
    anchor = mean_anchor(routes)
    assert anchor.shape == (2, 4)
    assert torch.allclose(anchor.exp(), routes.exp().mean(1))
    assert torch.allclose(anchor.exp().sum(-1), torch.ones(2))


def test_the_moving_average_starts_at_the_first_batch_and_moves_by_the_decay():
    first, second = log_routes(2, 8, 4, 1), log_routes(2, 8, 4, 2)
    anchor = ema_anchor(None, first)
    assert torch.allclose(anchor, mean_anchor(first))
    moved = ema_anchor(anchor, second, decay=0.9)
    expected = 0.9 * first.exp().mean(1) + 0.1 * second.exp().mean(1)
    assert torch.allclose(moved.exp(), expected)


def test_the_soft_anchor_becomes_the_hard_anchor_as_the_temperature_falls():
    prototypes = torch.eye(3, 5)
    anchors = log_routes(2, 3, 4, 3).transpose(0, 1)  # [C=3, A=2, E=4]
    features = prototypes[[2, 0, 1]] + 0.05
    cold = soft_anchor(features, prototypes, anchors, temperature=1e-3)
    assert torch.allclose(cold, anchors[[2, 0, 1]].transpose(0, 1), atol=1e-5)
    warm = soft_anchor(features, prototypes, anchors, temperature=10.0)
    assert not torch.allclose(warm, cold, atol=1e-2)
    assert torch.allclose(warm.exp().sum(-1), torch.ones(2, 3))


def test_task_identification_counts_the_images_taken_for_their_own_task():
    prototypes = torch.eye(4, 6)
    class_tasks = torch.tensor([0, 0, 1, 1])
    features = prototypes[[0, 1, 2, 3, 0]]
    true_tasks = torch.tensor([0, 0, 1, 1, 1])  # the last image looks like a task-0 class
    found = task_identification(features, prototypes, class_tasks, true_tasks, 0.1)
    assert found == pytest.approx(0.8)
    with pytest.raises(ValueError, match="must be positive"):
        anchor_weights(features, prototypes, 0.0)
