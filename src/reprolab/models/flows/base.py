"""The transform interface of the flows, chains and inversion of transforms, and the flow.

A `Transform` maps a batch x (batch, features) to y of the same shape and returns, per sample,
log |det ∂y/∂x| (shape (batch,)); `inverse` maps back and returns the log-determinant of the
inverse map, which is minus the forward one at the matching point. Both take an optional context
(batch, context_dim) that conditions the map and is never transformed.

Choices: a transform's `forward` is the normalizing direction, data → noise, so a `Flow`'s
`log_prob` runs `forward` and its `sample` runs `inverse` (the convention of nflows and zuko);
which of the two is one pass depends on the transform (a MAF is one pass forward and sequential
inverse), and `Inverse` swaps them (an inverse MAF, i.e. an IAF, samples in one pass). The base
is a standard normal of dimension ``features`` with no parameters; its noise is drawn from a
caller's `torch.Generator`, so one seed gives one set of samples, in the flow's dtype and on its
device (those of the transform's parameters, then of any `.to` or `.double`).
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod

import torch
from torch import nn


class Transform(nn.Module, ABC):
    """An invertible map of (batch, features) with per-sample log-determinants, optionally
    conditioned on a context (batch, context_dim)."""

    @abstractmethod
    def forward(
        self, x: torch.Tensor, context: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """y = f(x; context) and log |det ∂y/∂x| per sample, shape (batch,)."""

    @abstractmethod
    def inverse(
        self, y: torch.Tensor, context: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """x = f⁻¹(y; context) and log |det ∂x/∂y| per sample, shape (batch,)."""


class Chain(Transform):
    """Transforms applied in sequence: `forward` in the given order, `inverse` in reverse; the
    log-determinants add up. Every member sees the same context."""

    def __init__(self, *transforms: Transform) -> None:
        super().__init__()
        self.transforms = nn.ModuleList(transforms)

    def forward(
        self, x: torch.Tensor, context: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Apply the members first to last, summing their log-determinants."""
        total = x.new_zeros(x.shape[0])
        for transform in self.transforms:
            x, log_abs_det = transform(x, context)
            total = total + log_abs_det
        return x, total

    def inverse(
        self, y: torch.Tensor, context: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Invert the members last to first, summing their inverses' log-determinants."""
        total = y.new_zeros(y.shape[0])
        for transform in reversed(self.transforms):
            y, log_abs_det = transform.inverse(y, context)
            total = total + log_abs_det
        return y, total


class Inverse(Transform):
    """A transform with its two directions swapped: the inverse of a MAF is an IAF, one pass
    when sampling and sequential when evaluating the density of a given point."""

    def __init__(self, transform: Transform) -> None:
        super().__init__()
        self.transform = transform

    def forward(
        self, x: torch.Tensor, context: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The wrapped transform's inverse."""
        return self.transform.inverse(x, context)

    def inverse(
        self, y: torch.Tensor, context: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """The wrapped transform's forward."""
        return self.transform(y, context)


class Identity(Transform):
    """The identity map (log-determinant zero): a placeholder where a model has a transform
    slot that some of its variants leave empty. It ignores any context."""

    def forward(
        self, x: torch.Tensor, context: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """x itself, with zero log-determinants."""
        return x, x.new_zeros(x.shape[0])

    def inverse(
        self, y: torch.Tensor, context: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """y itself, with zero log-determinants."""
        return y, y.new_zeros(y.shape[0])


def standard_normal_log_prob(z: torch.Tensor) -> torch.Tensor:
    """log N(z; 0, I) per row of z (batch, features)."""
    return -0.5 * (z.square().sum(-1) + z.shape[-1] * math.log(2 * math.pi))


class Flow(nn.Module):
    """A density on R^features: a transform to a standard normal base.

    log p(x | c) = log N(f(x; c)) + log |det ∂f/∂x|; samples are f⁻¹(z; c) with z drawn from the
    base with the caller's generator.
    """

    def __init__(self, transform: Transform, features: int) -> None:
        super().__init__()
        self.transform = transform
        self.features = features
        # Carries the flow's dtype and device to the base noise (those of the transform's
        # parameters at construction, then whatever `.to` sets); it holds no state.
        like = next(transform.parameters(), None)
        origin = torch.zeros(()) if like is None else like.new_zeros(())
        self.register_buffer("_origin", origin, persistent=False)

    def log_prob(self, x: torch.Tensor, context: torch.Tensor | None = None) -> torch.Tensor:
        """log p(x | context) per row of x (batch, features), shape (batch,)."""
        z, log_abs_det = self.transform(x, context)
        return standard_normal_log_prob(z) + log_abs_det

    def sample_with_log_prob(
        self,
        n: int,
        context: torch.Tensor | None = None,
        generator: torch.Generator | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """n samples (n, features) and their log-probabilities (n,), through the inverse only.

        `context`, when the transform takes one, has one row per sample (n, context_dim). The
        base noise comes from `generator` (torch's global generator when None).
        """
        if context is not None and context.shape[0] != n:
            raise ValueError(f"context has {context.shape[0]} rows for {n} samples")
        z = torch.randn(
            n,
            self.features,
            generator=generator,
            dtype=self._origin.dtype,
            device=self._origin.device,
        )
        x, log_abs_det = self.transform.inverse(z, context)
        return x, standard_normal_log_prob(z) - log_abs_det

    def sample(
        self,
        n: int,
        context: torch.Tensor | None = None,
        generator: torch.Generator | None = None,
    ) -> torch.Tensor:
        """n samples (n, features); see `sample_with_log_prob`."""
        return self.sample_with_log_prob(n, context, generator)[0]


def jacobian_log_det(
    transform: Transform, x: torch.Tensor, context: torch.Tensor | None = None
) -> torch.Tensor:
    """log |det ∂y/∂x| of each row of x from the full Jacobian of that one sample (autograd,
    one row at a time): the brute-force reference a transform's own log-determinant is checked
    against. Cost grows with features², so it is for checks on a few rows."""
    from torch.autograd.functional import jacobian

    values = []
    for b in range(x.shape[0]):
        row = None if context is None else context[b : b + 1]
        matrix = jacobian(lambda v, row=row: transform(v[None], row)[0][0], x[b])
        values.append(torch.linalg.slogdet(matrix).logabsdet)
    return torch.stack(values)
