"""Checks shared by the flow tests: random parameters for a freshly built (identity) layer,
the per-sample log-determinant from autograd's Jacobian, and the round trip of a transform."""

from __future__ import annotations

import torch
from torch import nn

from reprolab.models.flows.base import Transform, jacobian_log_det


@torch.no_grad()
def randomize(module: nn.Module, seed: int, scale: float = 0.5) -> nn.Module:
    """Add N(0, scale²) noise, from a generator seeded by `seed`, to every parameter (the
    zero-initialised last layers included, so the layers stop being the identity)."""
    generator = torch.Generator().manual_seed(seed)
    for parameter in module.parameters():
        noise = torch.randn(parameter.shape, generator=generator, dtype=parameter.dtype)
        parameter.add_(scale * noise)
    return module


def autograd_log_det(
    transform: Transform, x: torch.Tensor, context: torch.Tensor | None
) -> torch.Tensor:
    """log |det ∂y/∂x| of each row of x from autograd (`jacobian_log_det`), without gradients."""
    with torch.no_grad():
        return jacobian_log_det(transform, x, context)


def assert_round_trip(
    transform: Transform, x: torch.Tensor, context: torch.Tensor | None, atol: float
) -> None:
    """inverse(forward(x)) ≈ x, forward(inverse(x)) ≈ x, and each inverse's log-determinant
    is minus the forward one at the matching point."""
    with torch.no_grad():
        y, log_det = transform(x, context)
        back, inverse_log_det = transform.inverse(y, context)
        assert not torch.allclose(y, x, atol=1e-3)  # a non-trivial map
        torch.testing.assert_close(back, x, atol=atol, rtol=0)
        torch.testing.assert_close(inverse_log_det, -log_det, atol=atol, rtol=0)
        x_of_x, inverse_at_x = transform.inverse(x, context)
        y_of_back, log_det_back = transform(x_of_x, context)
        torch.testing.assert_close(y_of_back, x, atol=atol, rtol=0)
        torch.testing.assert_close(log_det_back, -inverse_at_x, atol=atol, rtol=0)
