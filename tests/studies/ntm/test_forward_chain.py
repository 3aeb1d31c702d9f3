"""ntm's forward chain: the closed-form transitions, the marginals they keep, pure noise at
t = 1 and the transitions' Gaussian log-densities."""

from __future__ import annotations

import math

import pytest
import torch

from reprolab.studies.ntm.forward_chain import ForwardChain, gaussian_log_prob

TIMES = [0.05, 0.25, 0.5, 0.75, 1.0]


def test_transitions_have_the_closed_form():
    chain = ForwardChain(TIMES)
    assert chain.steps == 4
    a, s = chain.transition(2)
    assert a == pytest.approx(0.5 / 0.75)
    assert s**2 == pytest.approx(0.5**2 - a**2 * 0.25**2)
    assert chain.transition(4) == (0.0, 1.0)


def test_the_chain_keeps_the_interpolation_marginals_and_ends_in_noise():
    chain = ForwardChain(TIMES)
    x0 = torch.full((100_000, 2), 3.0, dtype=torch.float64)
    states = chain.trajectory(x0, torch.Generator().manual_seed(0))
    for t, x in zip(TIMES, states, strict=True):
        assert x.mean().item() == pytest.approx((1 - t) * 3.0, abs=0.01)
        assert x.std().item() == pytest.approx(t, rel=0.01)
    # the last state forgets the data: independent of x0 and standard normal
    other = chain.trajectory(-x0, torch.Generator().manual_seed(1))[-1]
    assert other.mean().item() == pytest.approx(0.0, abs=0.01)
    assert torch.corrcoef(torch.stack([states[1][:, 0], states[-1][:, 0]]))[0, 1].abs() < 0.01


def test_log_densities_are_gaussian():
    chain = ForwardChain(TIMES)
    before, after = torch.randn(5, 3, dtype=torch.float64), torch.randn(5, 3, dtype=torch.float64)
    a, s = chain.transition(3)
    expected = torch.distributions.Normal(a * before, s).log_prob(after).sum(-1)
    assert torch.allclose(chain.transition_log_prob(3, before, after), expected)
    start = chain.start_log_prob(before, after)
    expected = torch.distributions.Normal(0.95 * before, 0.05).log_prob(after).sum(-1)
    assert torch.allclose(start, expected)
    assert gaussian_log_prob(torch.zeros(1, 1), torch.zeros(1, 1), 1.0).item() == pytest.approx(
        -0.5 * math.log(2 * math.pi)
    )


@pytest.mark.parametrize(
    ("times", "message"),
    [([0.5], "up to exactly 1"), ([0.1, 0.9], "up to exactly 1"), ([0.5, 0.5, 1.0], "strictly")],
)
def test_bad_grids_are_refused(times, message):
    with pytest.raises(ValueError, match=message):
        ForwardChain(times)


def test_no_start_density_without_noise_augmentation():
    with pytest.raises(ValueError, match="no density"):
        ForwardChain([0.0, 1.0]).start_log_prob(torch.zeros(1, 1), torch.zeros(1, 1))
