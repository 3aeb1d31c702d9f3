"""The monotone rational-quadratic spline of Neural Spline Flows (Durkan et al. 2019), as
elementwise functions.

`rq_spline` maps each x through its own spline of K bins on [-bound, bound] and is the identity
outside (linear tails): knots at cumulative widths (abscissae) and heights (ordinates), both
fractions of the interval that sum to one, positive derivatives at the K - 1 interior knots and
derivative 1 at the two ends, so the map and its derivative are continuous at ±bound. The
inverse solves the bin's quadratic in the numerically stable form ξ = 2c / (-b - √(b² - 4ac)),
which has no cancellation for a root in [0, 1].

`spline_params` turns a conditioner's unconstrained outputs into such parameters: widths and
heights by a softmax with a floor (``min_width``, ``min_height``), derivatives by a softplus
with a floor shifted so that all-zero outputs give derivative 1; zero outputs are thus the
identity spline (equal bins, slope 1 throughout), which is how the layers start.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F


def spline_params(
    raw: torch.Tensor,
    bins: int,
    min_width: float = 1e-3,
    min_height: float = 1e-3,
    min_derivative: float = 1e-3,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Widths (..., K), heights (..., K) and interior derivatives (..., K - 1) from
    unconstrained `raw` (..., 3K - 1); zeros give the identity."""
    if raw.shape[-1] != 3 * bins - 1:
        raise ValueError(f"a spline of {bins} bins takes {3 * bins - 1} parameters")
    if min_width * bins >= 1 or min_height * bins >= 1:
        raise ValueError(f"{bins} bins cannot all have the minimum width or height")
    if not 0 < min_derivative < 1:
        raise ValueError(f"min_derivative must be in (0, 1), got {min_derivative}")
    raw_widths, raw_heights, raw_derivatives = raw.split([bins, bins, bins - 1], dim=-1)
    widths = min_width + (1 - min_width * bins) * torch.softmax(raw_widths, -1)
    heights = min_height + (1 - min_height * bins) * torch.softmax(raw_heights, -1)
    shift = math.log(math.expm1(1 - min_derivative))
    derivatives = min_derivative + F.softplus(raw_derivatives + shift)
    return widths, heights, derivatives


def _knots(fractions: torch.Tensor, bound: float) -> torch.Tensor:
    """K + 1 knot positions on [-bound, bound] from K fractions summing to one; the ends are
    exactly ±bound."""
    inner = 2 * bound * torch.cumsum(fractions[..., :-1], -1) - bound
    ends = fractions.new_full((*fractions.shape[:-1], 1), bound)
    return torch.cat([-ends, inner, ends], -1)


def rq_spline(
    x: torch.Tensor,
    widths: torch.Tensor,
    heights: torch.Tensor,
    derivatives: torch.Tensor,
    bound: float,
    inverse: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    """The spline (or its inverse) of each element of x and log |dy/dx| (of the map applied)
    elementwise, both of x's shape; parameters have x's shape plus the knot axis."""
    knots_x = _knots(widths, bound)
    knots_y = _knots(heights, bound)
    ones = derivatives.new_ones((*derivatives.shape[:-1], 1))
    slopes = torch.cat([ones, derivatives, ones], -1)

    inside = (x >= -bound) & (x <= bound)
    clamped = x.clamp(-bound, bound)
    edges = knots_y if inverse else knots_x
    k = (clamped[..., None] >= edges[..., 1:-1]).sum(-1, keepdim=True)

    def at(values: torch.Tensor, offset: int = 0) -> torch.Tensor:
        return values.gather(-1, k + offset).squeeze(-1)

    x_k, y_k, d_k, d_next = at(knots_x), at(knots_y), at(slopes), at(slopes, 1)
    width, height = at(knots_x, 1) - x_k, at(knots_y, 1) - y_k
    s = height / width
    curvature = d_next + d_k - 2 * s

    if inverse:
        dy = clamped - y_k
        a = height * (s - d_k) + dy * curvature
        b = height * d_k - dy * curvature
        c = -s * dy
        xi = 2 * c / (-b - torch.sqrt((b.square() - 4 * a * c).clamp_min(0)))
    else:
        xi = (clamped - x_k) / width
    between = xi * (1 - xi)
    denominator = s + curvature * between
    log_derivative = torch.log(
        s.square()
        * (d_next * xi.square() + 2 * s * between + d_k * (1 - xi).square())
        / denominator.square()
    )
    if inverse:
        out, log_derivative = x_k + xi * width, -log_derivative
    else:
        out = y_k + height * (s * xi.square() + d_k * between) / denominator
    return (
        torch.where(inside, out, x),
        torch.where(inside, log_derivative, torch.zeros_like(log_derivative)),
    )
