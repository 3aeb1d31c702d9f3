"""The elementwise maps that couplings and autoregressive layers apply to each transformed
dimension, given that dimension's parameters from a conditioner.

A map takes x (batch, d) and raw parameters (batch, d, ``params_per_dim``) and returns y and
log |dy/dx| elementwise (batch, d); ``inverse=True`` applies the inverse map with its own
log-derivative. All-zero parameters are the identity for both maps, so a layer whose
conditioner's last layer starts at zero starts as the identity.

Choices: the affine map is y = x · exp(s) + t with the log-scale soft-clamped,
s = bound · tanh(raw / bound), so one layer scales by at most exp(±bound) and a bad step cannot
blow up the density (the scale is smooth, unlike a hard clamp); the spline map is
`spline.rq_spline` on parameters from `spline.spline_params`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import torch

from reprolab.models.flows.spline import rq_spline, spline_params


class ElementwiseMap(Protocol):
    """What couplings and autoregressive layers need of a map: its parameter count per
    dimension and its application in either direction."""

    @property
    def params_per_dim(self) -> int:
        """Raw parameters the conditioner gives each transformed dimension."""
        ...

    def __call__(
        self, x: torch.Tensor, raw: torch.Tensor, inverse: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The map (or its inverse) of x (batch, d) and its log-derivative, elementwise."""
        ...


@dataclass(frozen=True)
class AffineMap:
    """y = x · exp(s) + t with raw (t, r) and s = bound · tanh(r / bound)."""

    scale_bound: float = 3.0

    @property
    def params_per_dim(self) -> int:
        """A shift and a raw log-scale."""
        return 2

    def __call__(
        self, x: torch.Tensor, raw: torch.Tensor, inverse: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The affine map (or its inverse) and its log-derivative, elementwise."""
        shift = raw[..., 0]
        log_scale = self.scale_bound * torch.tanh(raw[..., 1] / self.scale_bound)
        if inverse:
            return (x - shift) * torch.exp(-log_scale), -log_scale
        return x * torch.exp(log_scale) + shift, log_scale


@dataclass(frozen=True)
class SplineMap:
    """A rational-quadratic spline of ``bins`` bins on [-bound, bound], identity outside."""

    bins: int = 8
    bound: float = 5.0
    min_width: float = 1e-3
    min_height: float = 1e-3
    min_derivative: float = 1e-3

    @property
    def params_per_dim(self) -> int:
        """K widths, K heights and K - 1 interior derivatives."""
        return 3 * self.bins - 1

    def __call__(
        self, x: torch.Tensor, raw: torch.Tensor, inverse: bool = False
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The spline (or its inverse) and its log-derivative, elementwise."""
        widths, heights, derivatives = spline_params(
            raw, self.bins, self.min_width, self.min_height, self.min_derivative
        )
        return rq_spline(x, widths, heights, derivatives, self.bound, inverse)
