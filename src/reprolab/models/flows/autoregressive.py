"""MADE and the masked autoregressive flow (MAF) layers built on it.

MADE (Germain et al. 2015) is an MLP whose weights are masked through degrees: input i has
degree = its position (1-based) in the autoregressive order and each hidden unit a degree in
[1, features - 1]; a hidden unit sees the units below it of degree <= its own, and the outputs
of dimension i see the last hidden units of degree < that of i, so the parameters MADE outputs
for dimension i depend only on the dimensions before i in the order. The context, when there is
one, enters every layer unmasked (so even the first dimension in the order is conditioned).

Direction, which the planner's teacher/student split depends on: an autoregressive layer's
`forward` (data → noise, the density direction) is ONE pass of MADE, y_i = τ(x_i; MADE(x)_i);
its `inverse` (noise → data, sampling) is SEQUENTIAL, ``features`` passes of MADE, each fixing
one more dimension in the order. So a `Flow` of these layers evaluates log p(x) in one pass and
samples sequentially (a MAF, the autoregressive teacher); wrapped in `base.Inverse` it samples,
with the log-probabilities of its samples, in one pass and evaluates given points sequentially
(an IAF, the one-pass student).

Choices: hidden degrees cycle deterministically through 1..features - 1 (no random
connectivity, so a layer is a function of its seed's weights alone); the order is given or the
natural one; the last layer starts at zero, so every layer starts as the identity; SiLU
activations as in the coupling conditioner.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from torch import nn

from reprolab.models.flows.base import Transform
from reprolab.models.flows.elementwise import AffineMap, ElementwiseMap, SplineMap
from reprolab.models.flows.nets import join_context


def input_degrees(features: int, order: Sequence[int] | torch.Tensor | None = None) -> torch.Tensor:
    """Degree of each input: 1 + its position in `order` (the natural order when None)."""
    order = torch.arange(features) if order is None else torch.as_tensor(order)
    if sorted(order.tolist()) != list(range(features)):
        raise ValueError(f"order must be a permutation of range({features}), got {order}")
    degrees = torch.empty(features, dtype=torch.long)
    degrees[order] = torch.arange(1, features + 1)
    return degrees


class MaskedLinear(nn.Linear):
    """A linear layer whose weight is multiplied by a fixed 0/1 mask (out, in); the last
    ``context_dim`` inputs, the context, are never masked."""

    def __init__(self, mask: torch.Tensor, context_dim: int = 0) -> None:
        out_features, in_features = mask.shape
        super().__init__(in_features + context_dim, out_features)
        full = torch.cat([mask, torch.ones(out_features, context_dim, dtype=torch.bool)], 1)
        self.register_buffer("mask", full.to(self.weight.dtype))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x · (W ⊙ mask)ᵀ + b."""
        return F.linear(x, self.weight * self.mask, self.bias)


class MADE(nn.Module):
    """A masked MLP giving ``params_per_dim`` outputs per dimension, those of dimension i
    depending only on the dimensions before i in `order` (and on the context)."""

    def __init__(
        self,
        features: int,
        params_per_dim: int,
        hidden: Sequence[int] = (64, 64),
        context_dim: int = 0,
        order: Sequence[int] | torch.Tensor | None = None,
    ) -> None:
        super().__init__()
        self.features = features
        self.params_per_dim = params_per_dim
        self.context_dim = context_dim
        self.register_buffer("degrees", input_degrees(features, order))
        previous = self.degrees
        layers = []
        for width in hidden:
            # Degrees cycle through 1..features - 1; with one feature no hidden unit may see the
            # input, and degree 0 leaves them the context and the bias.
            if features > 1:
                units = torch.arange(width) % (features - 1) + 1
            else:
                units = torch.zeros(width, dtype=torch.long)
            layers.append(MaskedLinear(units[:, None] >= previous[None, :], context_dim))
            previous = units
        outputs = self.degrees.repeat_interleave(params_per_dim)
        last = MaskedLinear(outputs[:, None] > previous[None, :], context_dim)
        nn.init.zeros_(last.weight)
        nn.init.zeros_(last.bias)
        self.layers = nn.ModuleList([*layers, last])

    def forward(self, x: torch.Tensor, context: torch.Tensor | None = None) -> torch.Tensor:
        """(batch, features) and (batch, context_dim) → (batch, features, params_per_dim)."""
        h = x
        for layer in self.layers[:-1]:
            h = F.silu(layer(join_context(h, context, self.context_dim)))
        out = self.layers[-1](join_context(h, context, self.context_dim))
        return out.view(x.shape[0], self.features, self.params_per_dim)


class Autoregressive(Transform):
    """A MAF layer: `element_map` of each dimension with parameters from MADE of the
    dimensions before it; one pass forward (density), sequential inverse (sampling)."""

    def __init__(
        self,
        features: int,
        element_map: ElementwiseMap,
        hidden: Sequence[int] = (64, 64),
        context_dim: int = 0,
        order: Sequence[int] | torch.Tensor | None = None,
    ) -> None:
        super().__init__()
        self.element_map = element_map
        self.made = MADE(features, element_map.params_per_dim, hidden, context_dim, order)

    def forward(
        self, x: torch.Tensor, context: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """One pass: y_i = τ(x_i; MADE(x, context)_i)."""
        y, log_derivative = self.element_map(x, self.made(x, context))
        return y, log_derivative.sum(-1)

    def inverse(
        self, y: torch.Tensor, context: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """``features`` passes: after pass k the first k dimensions in the order are exact, so
        the last pass's parameters are those of the final x and give its log-determinant."""
        x = torch.zeros_like(y)
        for _ in range(self.made.features):
            x, log_derivative = self.element_map(y, self.made(x, context), inverse=True)
        return x, log_derivative.sum(-1)


class AffineAutoregressive(Autoregressive):
    """MAF with the soft-clamped affine map y_i = x_i · exp(s_i) + t_i."""

    def __init__(
        self,
        features: int,
        hidden: Sequence[int] = (64, 64),
        context_dim: int = 0,
        order: Sequence[int] | torch.Tensor | None = None,
        scale_bound: float = 3.0,
    ) -> None:
        super().__init__(features, AffineMap(scale_bound), hidden, context_dim, order)


class SplineAutoregressive(Autoregressive):
    """MAF with the rational-quadratic spline (``bins`` bins on [-bound, bound]) per
    dimension."""

    def __init__(
        self,
        features: int,
        hidden: Sequence[int] = (64, 64),
        context_dim: int = 0,
        order: Sequence[int] | torch.Tensor | None = None,
        bins: int = 8,
        bound: float = 5.0,
    ) -> None:
        super().__init__(features, SplineMap(bins, bound), hidden, context_dim, order)
