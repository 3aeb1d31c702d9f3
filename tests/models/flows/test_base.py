"""Chains, inversion and the flow: a chain composes and inverts in reverse order, `Inverse`
swaps directions, `Flow.log_prob` is a density (it integrates to one on a grid, in 1-D with a
context and in 2-D), and sampling is seed-deterministic with log-probabilities equal to
`log_prob` of the samples, for a MAF (sequential sampling) and an IAF (one-pass sampling)."""

from __future__ import annotations

import pytest
import torch

from reprolab.models.flows.autoregressive import AffineAutoregressive, SplineAutoregressive
from reprolab.models.flows.base import Chain, Flow, Identity, Inverse, standard_normal_log_prob
from reprolab.models.flows.coupling import AffineCoupling, SplineCoupling, alternating_mask
from reprolab.models.flows.permutation import Permutation, Reverse
from tests.models.flows.checks import assert_round_trip, autograd_log_det, randomize

pytestmark = pytest.mark.usefixtures("torch_one_thread")

CONTEXT = 2


def chain(features: int, context_dim: int, seed: int = 0, scale: float = 0.4) -> Chain:
    """Every kind of layer, in float64 with random parameters."""
    torch.manual_seed(seed)
    layers = Chain(
        AffineCoupling(alternating_mask(features), (8,), context_dim),
        SplineCoupling(alternating_mask(features, 1), (8,), context_dim, bins=5, bound=3.0),
        Reverse(features),
        AffineAutoregressive(features, (8,), context_dim),
        Permutation.from_seed(features, seed),
        SplineAutoregressive(features, (8,), context_dim, bins=5, bound=3.0),
    )
    return randomize(layers.double(), seed + 1, scale)


def grid_integral(density: torch.Tensor, axis: torch.Tensor) -> float:
    """The trapezoid rule over every axis of `density` (all on the same `axis`)."""
    for _ in range(density.ndim):
        density = torch.trapezoid(density, axis, dim=-1)
    return float(density)


def test_a_chain_composes_its_layers_and_inverts_them_in_reverse_order():
    layers = chain(3, CONTEXT)
    generator = torch.Generator().manual_seed(2)
    x = 2 * torch.randn(4, 3, generator=generator, dtype=torch.float64)
    context = torch.randn(4, CONTEXT, generator=generator, dtype=torch.float64)
    y, log_det = layers(x, context)
    expected, total = x, torch.zeros(4, dtype=torch.float64)
    for layer in layers.transforms:
        expected, part = layer(expected, context)
        total = total + part
    assert torch.equal(y, expected) and torch.equal(log_det, total)
    assert_round_trip(layers, x, context, atol=1e-8)
    torch.testing.assert_close(log_det, autograd_log_det(layers, x, context), atol=1e-9, rtol=0)


def test_inverse_swaps_the_directions():
    layers = chain(3, 0)
    x = torch.randn(5, 3, generator=torch.Generator().manual_seed(3), dtype=torch.float64)
    swapped = Inverse(layers)
    for mine, theirs in ((swapped(x), layers.inverse(x)), (swapped.inverse(x), layers(x))):
        assert all(torch.equal(a, b) for a, b in zip(mine, theirs, strict=True))


def test_a_one_dimensional_conditional_flow_integrates_to_one():
    torch.manual_seed(4)
    nothing_kept = torch.zeros(1, dtype=torch.bool)
    layers = Chain(
        SplineCoupling(nothing_kept, (8,), CONTEXT, bins=6, bound=3.0),
        AffineCoupling(nothing_kept, (8,), CONTEXT),
    )
    flow = Flow(randomize(layers, seed=5, scale=0.6), features=1).double()
    axis = torch.linspace(-40, 40, 80001, dtype=torch.float64)
    densities = []
    for context in torch.tensor([[0.0, 0.0], [1.5, -2.0]], dtype=torch.float64):
        with torch.no_grad():
            density = flow.log_prob(axis[:, None], context.expand(len(axis), CONTEXT)).exp()
        assert abs(grid_integral(density, axis) - 1) < 1e-3
        densities.append(density)
    assert (densities[0] - densities[1]).abs().max() > 0.05
    assert (densities[0] - standard_normal_log_prob(axis[:, None]).exp()).abs().max() > 0.05


def test_a_two_dimensional_flow_integrates_to_one():
    flow = Flow(chain(2, 0, seed=6, scale=0.25), features=2)  # smooth enough for h = 0.025
    axis = torch.linspace(-8, 8, 641, dtype=torch.float64)
    points = torch.cartesian_prod(axis, axis)
    with torch.no_grad():
        density = flow.log_prob(points).exp().view(len(axis), len(axis))
    assert abs(grid_integral(density, axis) - 1) < 1e-3
    border = torch.cat([density[0], density[-1], density[:, 0], density[:, -1]])
    assert border.max() < 1e-6  # the grid holds the mass
    gaussian = standard_normal_log_prob(points).exp().view_as(density)
    assert (density - gaussian).abs().max() > 0.01


@pytest.mark.parametrize("iaf", [False, True])
@pytest.mark.parametrize("context_dim", [0, CONTEXT])
@torch.no_grad()
def test_sampling_is_seeded_and_its_log_probabilities_are_log_prob(iaf, context_dim):
    layers = chain(3, context_dim, seed=7)
    flow = Flow(Inverse(layers) if iaf else layers, features=3)
    context = None
    if context_dim:
        context = torch.randn(50, context_dim, dtype=torch.float64)
    state = torch.random.get_rng_state()
    x, log_prob = flow.sample_with_log_prob(50, context, torch.Generator().manual_seed(8))
    assert torch.equal(torch.random.get_rng_state(), state)
    assert x.shape == (50, 3) and x.dtype == torch.float64
    assert torch.equal(flow.sample(50, context, torch.Generator().manual_seed(8)), x)
    assert not torch.equal(flow.sample(50, context, torch.Generator().manual_seed(9)), x)
    torch.testing.assert_close(log_prob, flow.log_prob(x, context), atol=1e-8, rtol=0)


def test_samples_follow_the_flows_dtype_and_the_context_needs_a_row_per_sample():
    flow = Flow(AffineAutoregressive(2, (4,), CONTEXT), features=2)
    context = torch.zeros(3, CONTEXT)
    assert flow.sample(3, context).dtype == torch.float32
    assert flow.double().sample(3, context.double()).dtype == torch.float64
    with pytest.raises(ValueError, match="context has 3 rows for 4 samples"):
        flow.sample(4, context.double())


def test_identity_passes_through_with_zero_log_det():
    x = torch.randn(4, 3)
    for direction in (Identity(), Identity().inverse):
        y, log_det = direction(x, None)
        assert torch.equal(y, x) and torch.equal(log_det, torch.zeros(4))
    assert sum(p.numel() for p in Identity().parameters()) == 0
