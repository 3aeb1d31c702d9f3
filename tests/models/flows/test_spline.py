"""The rational-quadratic spline: identity tails, monotone inside, exact knots and inverse,
log-derivatives equal to autograd's, continuous derivatives at the knots, and the parameter
constraints (zeros are the identity, floors hold)."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from reprolab.models.flows.spline import rq_spline, spline_params

pytestmark = pytest.mark.usefixtures("torch_one_thread")

BINS, BOUND = 6, 2.5


def params(n: int, seed: int = 0, scale: float = 1.5, dtype: torch.dtype = torch.float64):
    """Spline parameters of n random splines."""
    generator = torch.Generator().manual_seed(seed)
    raw = scale * torch.randn(n, 3 * BINS - 1, generator=generator, dtype=dtype)
    return spline_params(raw, BINS)


def knots(fractions: torch.Tensor) -> torch.Tensor:
    """Knot positions recomputed from the fractions, independently of the module."""
    return -BOUND + 2 * BOUND * F.pad(torch.cumsum(fractions, -1), (1, 0))


def test_identity_outside_the_bound_in_both_directions():
    widths, heights, derivatives = params(4)
    x = torch.tensor([-9.0, -2.5001, 2.5001, 40.0], dtype=torch.float64)
    for inverse in (False, True):
        y, log_det = rq_spline(x, widths, heights, derivatives, BOUND, inverse)
        assert torch.equal(y, x) and torch.equal(log_det, torch.zeros_like(x))


def test_monotone_and_onto_the_interval_inside():
    widths, heights, derivatives = params(3, seed=1)
    x = torch.linspace(-BOUND, BOUND, 2001, dtype=torch.float64)
    expand = [p[:, None].expand(3, len(x), p.shape[-1]) for p in (widths, heights, derivatives)]
    y, log_det = rq_spline(x.expand(3, -1), *expand, BOUND)
    assert torch.all(y.diff(dim=-1) > 0)
    assert torch.all(torch.isfinite(log_det))
    torch.testing.assert_close(y[:, [0, -1]], x[[0, -1]].expand(3, -1), atol=1e-12, rtol=0)
    assert not torch.allclose(y, x.expand(3, -1), atol=1e-2)


def test_knots_are_hit_exactly_both_ways():
    widths, heights, derivatives = params(2, seed=2)
    xs, ys = knots(widths), knots(heights)
    expand = [p[:, None].expand(2, BINS + 1, p.shape[-1]) for p in (widths, heights, derivatives)]
    y, _ = rq_spline(xs, *expand, BOUND)
    x, _ = rq_spline(ys, *expand, BOUND, inverse=True)
    torch.testing.assert_close(y, ys, atol=1e-12, rtol=0)
    torch.testing.assert_close(x, xs, atol=1e-12, rtol=0)


@pytest.mark.parametrize(
    ("dtype", "scale", "atol"), [(torch.float64, 3.0, 1e-8), (torch.float32, 0.7, 1e-4)]
)
def test_inverse_is_exact_and_its_log_derivative_is_minus_the_forward_one(dtype, scale, atol):
    """float64 with extreme bins (slopes from e^-14 up); float32 with moderate ones, since on
    a slope of e^-10 float32's rounding of y alone moves x by 1e-3."""
    n = 4000
    widths, heights, derivatives = params(n, seed=3, scale=scale, dtype=dtype)
    generator = torch.Generator().manual_seed(4)
    x = (2 * BOUND + 2) * torch.rand(n, generator=generator, dtype=dtype) - BOUND - 1
    y, log_det = rq_spline(x, widths, heights, derivatives, BOUND)
    back, inverse_log_det = rq_spline(y, widths, heights, derivatives, BOUND, inverse=True)
    torch.testing.assert_close(back, x, atol=atol, rtol=0)
    torch.testing.assert_close(inverse_log_det, -log_det, atol=atol, rtol=0)


def test_log_derivative_is_autograds():
    n = 500
    widths, heights, derivatives = params(n, seed=5)
    generator = torch.Generator().manual_seed(6)
    x = (2 * BOUND + 1) * torch.rand(n, generator=generator, dtype=torch.float64) - BOUND - 0.5
    x.requires_grad_(True)
    y, log_det = rq_spline(x, widths, heights, derivatives, BOUND)
    (slope,) = torch.autograd.grad(y.sum(), x)
    torch.testing.assert_close(log_det, slope.log(), atol=1e-10, rtol=0)
    y.detach_()
    y.requires_grad_(True)
    back, inverse_log_det = rq_spline(y, widths, heights, derivatives, BOUND, inverse=True)
    (inverse_slope,) = torch.autograd.grad(back.sum(), y)
    torch.testing.assert_close(inverse_log_det, inverse_slope.log(), atol=1e-8, rtol=0)


def test_the_derivative_is_continuous_at_the_knots_and_one_at_the_ends():
    widths, heights, derivatives = params(1, seed=7)
    xs = knots(widths)[0]
    slopes = torch.cat([torch.ones(1, dtype=torch.float64), derivatives[0], torch.ones(1)])
    eps = 1e-10  # the slope moves by at most f'' eps ~ 1e-7 between a knot and its neighbours
    for side in (-eps, 0.0, eps):
        points = xs + side
        expand = [p.expand(BINS + 1, p.shape[-1]) for p in (widths, heights, derivatives)]
        _, log_det = rq_spline(points, *expand, BOUND)
        torch.testing.assert_close(log_det.exp(), slopes, atol=1e-6, rtol=0)


def test_zero_parameters_are_the_identity():
    widths, heights, derivatives = spline_params(torch.zeros(5, 3 * BINS - 1), BINS)
    assert torch.allclose(derivatives, torch.ones_like(derivatives))
    x = torch.linspace(-BOUND, BOUND, 5)
    y, log_det = rq_spline(x, widths, heights, derivatives, BOUND)
    torch.testing.assert_close(y, x, atol=1e-6, rtol=0)
    torch.testing.assert_close(log_det, torch.zeros(5), atol=1e-6, rtol=0)


def test_the_floors_hold_for_extreme_parameters():
    raw = 60 * torch.randn(50, 3 * BINS - 1, generator=torch.Generator().manual_seed(8))
    widths, heights, derivatives = spline_params(raw, BINS, 0.01, 0.02, 0.03)
    assert widths.min() >= 0.01 and heights.min() >= 0.02 and derivatives.min() >= 0.03
    torch.testing.assert_close(widths.sum(-1), torch.ones(50))
    torch.testing.assert_close(heights.sum(-1), torch.ones(50))


def test_bad_parameters_are_refused():
    with pytest.raises(ValueError, match="takes 17 parameters"):
        spline_params(torch.zeros(3 * BINS), BINS)
    with pytest.raises(ValueError, match="minimum width"):
        spline_params(torch.zeros(3 * BINS - 1), BINS, min_width=0.2)
    with pytest.raises(ValueError, match="min_derivative"):
        spline_params(torch.zeros(3 * BINS - 1), BINS, min_derivative=1.0)
