"""ntm's trajectory model: the reverse-causal predictor, exact step densities (change of
variables against brute force), the Gaussian special case, and sampling."""

from __future__ import annotations

import math

import pytest
import torch

from reprolab.studies.ntm.forward_chain import ForwardChain
from reprolab.studies.ntm.trajectory_model import Predictor, TrajectoryModel, transporter
from tests.models.flows.checks import randomize

TIMES = [0.05, 0.25, 0.5, 0.75, 1.0]


def randomized(model: torch.nn.Module, seed: int = 0) -> torch.nn.Module:
    """The model with small random noise on every parameter (the zero-initialised layers start
    as the identity, which would make the checks trivial)."""
    with torch.no_grad():
        return randomize(model, seed, scale=0.1)


def test_token_k_sees_only_the_noisier_states():
    torch.manual_seed(0)
    predictor = randomized(Predictor(2, TIMES[1:], 16, 2, 8, attention=True)).double()
    states = torch.randn(3, 4, 2, dtype=torch.float64)
    base = predictor(states)
    changed = states.clone()
    changed[:, 0] += 1.0  # x_{t_1}: only token 1 may change
    after = predictor(changed)
    assert torch.equal(after[:, 1:], base[:, 1:])
    assert not torch.allclose(after[:, 0], base[:, 0])
    changed = states.clone()
    changed[:, 3] += 1.0  # x_{t_4}: every token sees it
    after = predictor(changed)
    assert not any(torch.allclose(after[:, k], base[:, k]) for k in range(4))


def test_the_markov_predictor_reads_each_token_alone():
    predictor = randomized(Predictor(2, TIMES[1:], 16, 2, 8, attention=False)).double()
    states = torch.randn(3, 4, 2, dtype=torch.float64)
    changed = states.clone()
    changed[:, 2] += 1.0
    difference = (predictor(changed) - predictor(states)).abs().amax(dim=(0, 2))
    assert difference[2] > 0 and difference[[0, 1, 3]].max() == 0


@pytest.mark.parametrize("kind", ["affine", "spline"])
def test_a_one_dimensional_step_density_is_exact(kind):
    """Change of variables against brute force in 1-D: log N(T(x)) + log T'(x) with T' from
    autograd, not the flow's own log-derivative, and the density integrates to 1."""
    model = TrajectoryModel(1, ForwardChain(TIMES), kind, context_dim=4).double()
    randomized(model.transporters)
    context = torch.randn(1, 4, dtype=torch.float64).expand(40001, 4)
    grid = torch.linspace(-40, 40, 40001, dtype=torch.float64)[:, None]
    log_p = model.step_log_prob(2, grid, context)
    assert torch.trapezoid(log_p.exp(), grid[:, 0]).item() == pytest.approx(1.0, abs=1e-6)
    point = grid.clone().requires_grad_(True)
    u = model.transporters[1](point, context)[0][:, 0]
    (derivative,) = torch.autograd.grad(u.sum(), point)  # rows are independent: dT/dx per row
    derivative = derivative[:, 0]
    mean, log_std = model.gaussian(context).chunk(2, -1)
    z = (u - mean[:, 0]) / log_std[:, 0].exp()
    brute = -0.5 * z**2 - log_std[:, 0] - 0.5 * math.log(2 * math.pi) + derivative.log()
    assert torch.allclose(log_p, brute, atol=1e-10)


def test_the_trajectory_log_prob_adds_the_prior_and_every_step():
    model = randomized(TrajectoryModel(2, ForwardChain(TIMES), "affine", context_dim=4)).double()
    states = ForwardChain(TIMES).trajectory(
        torch.randn(5, 2, dtype=torch.float64), torch.Generator().manual_seed(1)
    )
    contexts = model.predictor(torch.stack(states[1:], 1))
    by_hand = -0.5 * states[-1].square().sum(-1) - math.log(2 * math.pi)
    for k in range(1, 5):
        by_hand = by_hand + model.step_log_prob(k, states[k - 1], contexts[:, k - 1])
    assert torch.allclose(model.trajectory_log_prob(states), by_hand)


def test_the_gaussian_step_model_has_no_transport():
    model = TrajectoryModel(2, ForwardChain(TIMES), "identity", context_dim=4)
    assert sum(p.numel() for p in model.transporters.parameters()) == 0
    x = torch.randn(3, 2)
    assert torch.equal(model.transporters[0](x)[0], x)


def test_sampling_is_seeded_and_inverts_every_step():
    model = TrajectoryModel(2, ForwardChain(TIMES), "spline", context_dim=4)
    randomized(model.transporters)  # the Gaussian heads keep their default (finite) scale
    first = model.sample(64, torch.Generator().manual_seed(3))
    again = model.sample(64, torch.Generator().manual_seed(3))
    assert len(first) == 5 and all(torch.equal(a, b) for a, b in zip(first, again, strict=True))
    # each sampled x_{t_{k-1}} maps back through T_k to a finite Gaussian draw
    assert torch.isfinite(model.trajectory_log_prob(first)).all()


def test_an_unknown_transporter_is_named():
    with pytest.raises(ValueError, match="'real_nvp'"):
        transporter("real_nvp", 2, 4, (8,), 4)
