"""ntm's trajectory loss: the exact trajectory NLL in nats per dimension."""

from __future__ import annotations

import pytest
import torch

from reprolab.studies.ntm.forward_chain import ForwardChain
from reprolab.studies.ntm.training import trajectory_loss
from reprolab.studies.ntm.trajectory_model import TrajectoryModel


def test_the_trajectory_loss_is_in_nats_per_dimension():
    model = TrajectoryModel(2, ForwardChain([0.1, 0.5, 1.0]), "identity", context_dim=4)
    loss = trajectory_loss(model, torch.zeros(64, 2), torch.Generator().manual_seed(0))
    states = ForwardChain([0.1, 0.5, 1.0]).trajectory(
        torch.zeros(64, 2), torch.Generator().manual_seed(0)
    )
    expected = -model.step_log_probs(states).sum(-1).mean() / (2 * 2)
    assert loss.item() == pytest.approx(expected.item())
