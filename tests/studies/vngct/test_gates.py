"""The necessity gate, the random-gate control and the in-batch null shift."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from reprolab.studies.vngct.gates import NecessityGate, RandomGate, shifted


def _normal(seed: int, n: int, loc: float = 0.0) -> torch.Tensor:
    return torch.as_tensor(np.random.default_rng(seed).normal(loc, 1.0, n), dtype=torch.float32)


def test_shifted_gives_every_sample_its_neighbours_entry():
    values = torch.arange(8.0).reshape(4, 2)
    out = shifted(values)
    assert torch.equal(out, values[[3, 0, 1, 2]])
    assert not (out == values).all(1).any()  # no sample keeps its own


def test_symmetric_noise_routes_about_the_quantile_share():
    gate = NecessityGate(floor=0.05, noise_quantile=0.05)
    values = _normal(0, 4000)
    routed = gate(values)
    assert routed.dtype == torch.float32 and set(routed.unique().tolist()) <= {0.0, 1.0}
    threshold = -float(np.quantile(values.double().numpy(), 0.05))
    assert torch.equal(routed, (values > threshold).float())
    assert 0.03 < float(routed.mean()) < 0.07


def test_clearly_positive_necessity_is_routed_whole():
    gate = NecessityGate(floor=0.05, noise_quantile=0.05)
    values = torch.linspace(0.5, 3.0, 64)
    assert torch.equal(gate(values), torch.ones(64))


def test_the_floor_holds_back_small_positive_values():
    gate = NecessityGate(floor=0.05, noise_quantile=0.05)
    assert torch.equal(gate(torch.full((16,), 0.04)), torch.zeros(16))


def test_the_noise_level_spans_the_task_and_start_task_forgets_it():
    gate = NecessityGate(floor=0.05, noise_quantile=0.25)
    gate(torch.full((32,), -2.0))  # a noisy earlier batch of the same task
    positive = torch.full((8,), 1.0)
    assert torch.equal(gate(positive), torch.zeros(8))  # noise 2 nats: 1 nat is not enough
    gate.start_task()
    assert torch.equal(gate(positive), torch.ones(8))


@pytest.mark.parametrize("quantile", [0.0, 0.5, -0.1, 0.7])
def test_a_bad_noise_quantile_is_refused(quantile):
    with pytest.raises(
        ValueError, match=f"noise_quantile must lie in \\(0, 0.5\\), got {quantile}"
    ):
        NecessityGate(floor=0.05, noise_quantile=quantile)


def test_random_gate_matches_its_rate():
    gate = RandomGate(seed=4)
    gate.rate = 0.3
    draws = torch.cat([gate(100) for _ in range(100)])
    assert set(draws.unique().tolist()) == {0.0, 1.0} and draws.dtype == torch.float32
    assert abs(float(draws.mean()) - 0.3) < 0.02  # 10,000 draws: sd 0.0046
    gate.rate = 0.0
    assert torch.equal(gate(50), torch.zeros(50))
    gate.rate = 1.0
    assert torch.equal(gate(50), torch.ones(50))


def test_random_gate_is_reproducible_per_seed():
    def draws(seed: int) -> torch.Tensor:
        gate = RandomGate(seed)
        gate.rate = 0.5
        return torch.cat([gate(32), gate(32)])

    assert torch.equal(draws(7), draws(7))
    assert not torch.equal(draws(7), draws(8))


def test_random_gate_leaves_the_global_rng_alone():
    torch.manual_seed(0)
    expected = torch.rand(3)
    torch.manual_seed(0)
    gate = RandomGate(1)
    gate.rate = 0.5
    gate(16)
    assert torch.equal(torch.rand(3), expected)
