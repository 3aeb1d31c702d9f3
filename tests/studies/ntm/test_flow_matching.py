"""ntm's baselines: Euler sampling of a known velocity field, the consistency
parameterisation's boundary condition, Heun's step, the EMA and multistep sampling."""

from __future__ import annotations

import torch
from torch import nn

from reprolab.studies.ntm.flow_matching import (
    ConsistencyModel,
    VelocityNet,
    consistency_sample,
    ema_update,
    euler_sample,
    flow_matching_loss,
    heun_step,
    interpolate,
)


class ConstantVelocity(VelocityNet):
    """v(x, t) = ε − x₀ for data at a point c: the straight path from c, whatever x and t."""

    def __init__(self, centre: torch.Tensor) -> None:
        nn.Module.__init__(self)
        self.centre = centre

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        # on the straight path x_t = (1 − t)c + tε, the velocity ε − c = (x_t − c)/t
        return (x - self.centre) / t[:, None].clamp_min(1e-12)


def test_euler_follows_straight_paths_exactly():
    centre = torch.tensor([2.0, -1.0])
    samples = euler_sample(ConstantVelocity(centre), 8, 2, 4, torch.Generator().manual_seed(0))
    assert torch.allclose(samples, centre.expand(8, 2), atol=1e-6)


def test_heun_is_exact_on_a_linear_field():
    centre = torch.tensor([0.5])
    x = torch.tensor([[3.0]])
    t, t_next = torch.tensor([0.8]), torch.tensor([0.4])
    # x_t = c + t·(x_{0.8} − c)/0.8 along the straight path
    expected = centre + 0.4 * (x - centre) / 0.8
    assert torch.allclose(heun_step(ConstantVelocity(centre), x, t, t_next), expected)


def test_the_consistency_model_is_the_identity_at_time_zero_and_starts_as_the_teacher():
    teacher = VelocityNet(2, width=8, blocks=1)
    model = ConsistencyModel(teacher)
    x, t = torch.randn(4, 2), torch.full((4,), 0.6)
    assert torch.equal(model(x, torch.zeros(4)), x)
    assert torch.allclose(model(x, t), x - 0.6 * teacher(x, t))
    assert model.net is not teacher


def test_ema_moves_the_target_by_one_minus_decay():
    target, online = nn.Linear(2, 2), nn.Linear(2, 2)
    before = target.weight.detach().clone()
    ema_update(target, online, 0.9)
    assert torch.allclose(target.weight, 0.9 * before + 0.1 * online.weight)


def test_multistep_sampling_is_seeded_and_uses_every_time():
    model = ConsistencyModel(VelocityNet(2, width=8, blocks=1))
    first = consistency_sample(model, 5, 2, [1.0, 0.5], torch.Generator().manual_seed(0))
    again = consistency_sample(model, 5, 2, [1.0, 0.5], torch.Generator().manual_seed(0))
    assert torch.equal(first, again) and first.shape == (5, 2)


def test_the_flow_matching_loss_vanishes_for_the_true_velocity():
    centre = torch.tensor([1.0, 1.0])
    x0 = centre.expand(16, 2).clone()
    loss = flow_matching_loss(ConstantVelocity(centre), x0, torch.Generator().manual_seed(2))
    assert loss.item() < 1e-8
    assert torch.equal(interpolate(x0, torch.zeros(16, 2), torch.zeros(16)), x0)
