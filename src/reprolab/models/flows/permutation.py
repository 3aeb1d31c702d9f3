"""Fixed permutations of the dimensions, placed between couplings or autoregressive layers so
every dimension gets transformed and conditions the others.

A permutation's log-determinant is 0 and it ignores the context. Choices: the order is fixed
(a buffer, saved with the model, not trained); `Permutation.from_seed` draws it from its own
`torch.Generator`, so it depends on the seed alone and not on torch's global RNG; `Reverse` is
the order reversed. There is no ActNorm or learned 1×1 mixing: the studies' dimensions are few
and standardised, and fixed permutations keep every layer's log-determinant exact and cheap.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from reprolab.models.flows.base import Transform


class Permutation(Transform):
    """y[:, k] = x[:, order[k]]."""

    def __init__(self, order: Sequence[int] | torch.Tensor) -> None:
        super().__init__()
        order = torch.as_tensor(order, dtype=torch.long)
        if sorted(order.tolist()) != list(range(len(order))):
            raise ValueError(f"order must be a permutation of range({len(order)}), got {order}")
        self.register_buffer("order", order)
        self.register_buffer("undo", torch.argsort(order))

    @classmethod
    def from_seed(cls, features: int, seed: int) -> Permutation:
        """A random order of ``features`` dimensions drawn from a generator seeded by `seed`."""
        generator = torch.Generator().manual_seed(seed)
        return cls(torch.randperm(features, generator=generator))

    def forward(
        self, x: torch.Tensor, context: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Reorder the dimensions; log-determinant 0."""
        return x[:, self.order], x.new_zeros(x.shape[0])

    def inverse(
        self, y: torch.Tensor, context: torch.Tensor | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Restore the original order; log-determinant 0."""
        return y[:, self.undo], y.new_zeros(y.shape[0])


class Reverse(Permutation):
    """The dimensions in reverse order (its own inverse)."""

    def __init__(self, features: int) -> None:
        super().__init__(torch.arange(features - 1, -1, -1))
