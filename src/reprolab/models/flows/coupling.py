"""Coupling layers: the dimensions a binary mask keeps pass unchanged and, with the optional
context, drive an MLP whose outputs parameterise an elementwise map of the other dimensions.

Both directions are one pass and the Jacobian is triangular after sorting kept dimensions
first, so the log-determinant is the sum of the map's log-derivatives over the transformed
dimensions. Choices: the mask is given (``True`` = kept), `alternating_mask` gives the usual
even/odd split; a mask may keep nothing, and the layer is then an elementwise map conditioned
on the context alone (a conditional 1-D flow); the MLP's last layer starts at zero, so every
coupling starts as the identity. `AffineCoupling` uses the soft-clamped affine map (RealNVP),
`SplineCoupling` the rational-quadratic spline (Neural Spline Flows).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from reprolab.models.flows.base import Transform
from reprolab.models.flows.elementwise import AffineMap, ElementwiseMap, SplineMap
from reprolab.models.flows.nets import MLP


def alternating_mask(features: int, parity: int = 0) -> torch.Tensor:
    """Keep the dimensions whose index has the given parity (0: even ones kept)."""
    return torch.arange(features) % 2 == parity


class Coupling(Transform):
    """A coupling layer applying `element_map` to the dimensions `mask` does not keep."""

    def __init__(
        self,
        mask: torch.Tensor,
        element_map: ElementwiseMap,
        hidden: Sequence[int] = (64, 64),
        context_dim: int = 0,
    ) -> None:
        super().__init__()
        mask = torch.as_tensor(mask, dtype=torch.bool)
        if mask.ndim != 1 or bool(mask.all()):
            raise ValueError("the mask must be 1-D and leave at least one dimension transformed")
        self.register_buffer("kept", torch.nonzero(mask).squeeze(-1))
        self.register_buffer("changed", torch.nonzero(~mask).squeeze(-1))
        self.element_map = element_map
        self.conditioner = MLP(
            len(self.kept), len(self.changed) * element_map.params_per_dim, hidden, context_dim
        )

    def _couple(
        self, x: torch.Tensor, context: torch.Tensor | None, inverse: bool
    ) -> tuple[torch.Tensor, torch.Tensor]:
        raw = self.conditioner(x[:, self.kept], context)
        raw = raw.view(x.shape[0], len(self.changed), self.element_map.params_per_dim)
        out, log_derivative = self.element_map(x[:, self.changed], raw, inverse)
        return x.index_copy(1, self.changed, out), log_derivative.sum(-1)

    def forward(
        self, x: torch.Tensor, context: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Map the transformed dimensions given the kept ones and the context."""
        return self._couple(x, context, inverse=False)

    def inverse(
        self, y: torch.Tensor, context: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Invert the map of the transformed dimensions (the kept ones are unchanged)."""
        return self._couple(y, context, inverse=True)


class AffineCoupling(Coupling):
    """RealNVP's affine coupling, y = x · exp(s) + t, with a log-scale soft-clamped to
    ±``scale_bound``."""

    def __init__(
        self,
        mask: torch.Tensor,
        hidden: Sequence[int] = (64, 64),
        context_dim: int = 0,
        scale_bound: float = 3.0,
    ) -> None:
        super().__init__(mask, AffineMap(scale_bound), hidden, context_dim)


class SplineCoupling(Coupling):
    """A rational-quadratic spline coupling: ``bins`` bins on [-bound, bound], identity
    outside."""

    def __init__(
        self,
        mask: torch.Tensor,
        hidden: Sequence[int] = (64, 64),
        context_dim: int = 0,
        bins: int = 8,
        bound: float = 5.0,
    ) -> None:
        super().__init__(mask, SplineMap(bins, bound), hidden, context_dim)
