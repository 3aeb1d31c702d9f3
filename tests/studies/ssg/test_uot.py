"""The torch (un)balanced Sinkhorn against POT, its balanced limit and the grounding behaviour."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from reprolab.studies.ssg.uot import normalise_cost, retained_mass, sinkhorn, squared_cost


def _problem(seed: int, n: int, m: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(1, n, 4, generator=gen, dtype=torch.float64)
    y = torch.randn(1, m, 4, generator=gen, dtype=torch.float64)
    a = torch.rand(1, n, generator=gen, dtype=torch.float64) + 0.5
    b = torch.rand(1, m, generator=gen, dtype=torch.float64) + 0.5
    return squared_cost(x, y), a / a.sum(), b / b.sum()


@pytest.mark.parametrize(("eps", "rho"), [(0.05, 0.5), (0.2, 1.0), (0.1, 10.0)])
def test_plan_matches_pot(eps, rho):
    import ot

    cost, a, b = _problem(0, 7, 5)
    cost = normalise_cost(cost, torch.ones_like(cost, dtype=torch.bool))
    plan, g = sinkhorn(cost, a, b, eps, rho, 200, normalise=False)
    ref = ot.unbalanced.sinkhorn_unbalanced(
        a[0].numpy(),
        b[0].numpy(),
        cost[0].numpy(),
        eps,
        rho,
        reg_type="kl",
        numItermax=200,
        stopThr=0.0,
    )
    assert np.abs(plan[0].numpy() - ref).max() < 1e-4
    assert np.allclose(g[0].numpy(), ref.sum(1) / a[0].numpy(), atol=1e-4)


def test_normalisation_and_padding_leave_the_plan_unchanged():
    cost, a, b = _problem(1, 6, 4)
    plan, g = sinkhorn(cost, a, b, 0.05, 0.5, 30)
    pad_cost = torch.zeros(1, 9, 4, dtype=torch.float64)
    pad_cost[:, :6] = cost * 3.0  # scale-free: the cost is normalised by its valid mean
    pad_cost[:, 6:] = 1e3  # padded rows must not enter the mean or the plan
    pad_a = torch.cat([a, torch.zeros(1, 3, dtype=torch.float64)], 1)
    pad_plan, pad_g = sinkhorn(pad_cost, pad_a, b, 0.05, 0.5, 30)
    assert torch.allclose(pad_plan[:, :6], plan, atol=1e-10)
    assert torch.all(pad_plan[:, 6:] == 0) and torch.all(pad_g[:, 6:] == 0)
    assert torch.allclose(pad_g[:, :6], g, atol=1e-10)


def test_large_rho_recovers_balanced_marginals():
    cost, a, b = _problem(2, 8, 6)
    for rho in (math.inf, 1e6):
        plan, g = sinkhorn(cost, a, b, 0.1, rho, 500)
        assert torch.allclose(plan.sum(-1), a, atol=1e-5)
        assert torch.allclose(plan.sum(-2), b, atol=1e-5)
        assert torch.allclose(g, torch.ones_like(g), atol=1e-4)


def test_outlier_instance_loses_its_mass():
    gen = torch.Generator().manual_seed(3)
    supports = torch.randn(20, 8, generator=gen)
    bag = supports[:6] + 0.05 * torch.randn(6, 8, generator=gen)
    bag = torch.cat([bag, torch.full((1, 8), 12.0)])  # one instance far from every support
    g = retained_mass(bag[None], torch.ones(1, 7, dtype=torch.bool), supports, 0.05, 0.5, 30)[0]
    assert g[-1] < 0.05
    assert torch.all(g[:-1] > 0.8)
    with pytest.raises(ValueError, match="cost"):
        sinkhorn(torch.zeros(2, 3), torch.ones(2), torch.ones(3), 0.1, 1.0, 1)
