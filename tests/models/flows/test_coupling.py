"""Affine and spline couplings, with and without a context: identity at initialisation, exact
inverse, log-determinants equal to autograd's Jacobian, kept dimensions untouched, the context
used and checked, and a mask that keeps nothing (a conditional elementwise map)."""

from __future__ import annotations

import pytest
import torch

from reprolab.models.flows.coupling import (
    AffineCoupling,
    Coupling,
    SplineCoupling,
    alternating_mask,
)
from reprolab.models.flows.elementwise import AffineMap
from tests.models.flows.checks import assert_round_trip, autograd_log_det, randomize

pytestmark = pytest.mark.usefixtures("torch_one_thread")

FEATURES, CONTEXT = 5, 3


def build(kind: str, context_dim: int, mask: torch.Tensor | None = None) -> Coupling:
    """A small coupling of `kind` (seeded); the spline's bound is small so that inputs fall
    both inside and in the tails."""
    torch.manual_seed(0)
    mask = alternating_mask(FEATURES) if mask is None else mask
    if kind == "affine":
        return AffineCoupling(mask, hidden=(8, 8), context_dim=context_dim)
    return SplineCoupling(mask, hidden=(8, 8), context_dim=context_dim, bins=5, bound=2.0)


def inputs(n: int, context_dim: int, dtype: torch.dtype = torch.float64, seed: int = 1):
    """Inputs (n, FEATURES) spread over ±4 and a context (n, context_dim), or None."""
    generator = torch.Generator().manual_seed(seed)
    x = 2 * torch.randn(n, FEATURES, generator=generator, dtype=dtype)
    if not context_dim:
        return x, None
    return x, torch.randn(n, context_dim, generator=generator, dtype=dtype)


CASES = [(kind, c) for kind in ("affine", "spline") for c in (0, CONTEXT)]


@pytest.mark.parametrize(("kind", "context_dim"), CASES)
def test_a_fresh_coupling_is_the_identity(kind, context_dim):
    x, context = inputs(6, context_dim, torch.float32)
    y, log_det = build(kind, context_dim)(x, context)
    torch.testing.assert_close(y, x, atol=1e-6, rtol=0)
    torch.testing.assert_close(log_det, torch.zeros(6), atol=1e-6, rtol=0)


@pytest.mark.parametrize(("kind", "context_dim"), CASES)
@pytest.mark.parametrize(
    ("dtype", "scale", "atol"), [(torch.float64, 0.5, 1e-8), (torch.float32, 0.2, 1e-4)]
)
def test_the_inverse_undoes_the_coupling(kind, context_dim, dtype, scale, atol):
    """float32 with moderate parameters: on a nearly flat spline bin (slope e^-10, which
    parameters of scale 0.5 reach) float32's rounding of y alone moves x by 1e-3."""
    layer = randomize(build(kind, context_dim).to(dtype), seed=2, scale=scale)
    x, context = inputs(64, context_dim, dtype)
    assert_round_trip(layer, x, context, atol)


@pytest.mark.parametrize(("kind", "context_dim"), CASES)
def test_the_log_determinant_is_that_of_the_jacobian(kind, context_dim):
    layer = randomize(build(kind, context_dim).double(), seed=3)
    x, context = inputs(4, context_dim)
    if kind == "spline":
        changed = x[:, ~alternating_mask(FEATURES)]
        assert (changed.abs() < 2).any() and (changed.abs() > 2).any()  # inside and tails
    _, log_det = layer(x, context)
    torch.testing.assert_close(log_det, autograd_log_det(layer, x, context), atol=1e-9, rtol=0)
    assert (log_det.abs() > 1e-3).sum() >= 3


@pytest.mark.parametrize(("kind", "context_dim"), CASES)
@torch.no_grad()
def test_kept_dimensions_pass_unchanged_and_the_others_change(kind, context_dim):
    layer = randomize(build(kind, context_dim).double(), seed=4)
    x, context = inputs(16, context_dim)
    y, _ = layer(x, context)
    kept = alternating_mask(FEATURES)
    assert torch.equal(y[:, kept], x[:, kept])
    moved = (y[:, ~kept] - x[:, ~kept]).abs() > 1e-3
    assert moved.any(0).all()  # in every transformed dimension (the spline's tails stay put)


@pytest.mark.parametrize("kind", ["affine", "spline"])
@torch.no_grad()
def test_the_context_conditions_the_map_and_is_checked(kind):
    layer = randomize(build(kind, CONTEXT).double(), seed=5)
    x, context = inputs(8, CONTEXT)
    assert not torch.allclose(layer(x, context)[0], layer(x, context + 1)[0], atol=1e-3)
    with pytest.raises(ValueError, match="needs a context of 3 features"):
        layer(x)
    with pytest.raises(ValueError, match="expected \\(8, 3\\)"):
        layer(x, context[:, :2])
    with pytest.raises(ValueError, match="built without a context"):
        build(kind, 0)(x, context)


@pytest.mark.parametrize("kind", ["affine", "spline"])
def test_a_mask_keeping_nothing_is_an_elementwise_map_of_the_context(kind):
    layer = randomize(build(kind, CONTEXT, mask=torch.zeros(FEATURES, dtype=bool)).double(), 6)
    x, context = inputs(4, CONTEXT)
    assert_round_trip(layer, x, context, atol=1e-10)
    jacobian_rows = torch.func.vmap(torch.func.jacrev(lambda v, c: layer(v[None], c[None])[0][0]))
    jacobians = jacobian_rows(x, context)
    assert torch.equal(jacobians, torch.diag_embed(jacobians.diagonal(dim1=-2, dim2=-1)))
    _, log_det = layer(x, context)
    torch.testing.assert_close(log_det, autograd_log_det(layer, x, context), atol=1e-9, rtol=0)


def test_the_affine_scale_is_soft_clamped():
    raw = torch.tensor([[[0.0, -1e4], [0.0, 1e4], [0.0, 0.5]]])
    _, log_scale = AffineMap(scale_bound=2.0)(torch.ones(1, 3), raw)
    torch.testing.assert_close(log_scale[0, :2], torch.tensor([-2.0, 2.0]))
    assert 0.45 < float(log_scale[0, 2]) < 0.5


def test_bad_masks_are_refused():
    with pytest.raises(ValueError, match="at least one dimension transformed"):
        AffineCoupling(torch.ones(3, dtype=bool))
    with pytest.raises(ValueError, match="must be 1-D"):
        SplineCoupling(torch.zeros(2, 2, dtype=bool))
