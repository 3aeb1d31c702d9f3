"""Per-class FIFO bank of detached support embeddings (the label-consistent supports).

For every training bag the top ⌈fraction · n⌉ instances by attention are the bag's supports;
their embeddings are detached and appended to the bank of the bag's class, which keeps the
newest `capacity` vectors (first in, first out). A training step reads the bank *before* it
pushes its own supports, so a bag is grounded against supports of other bags (with a bank
smaller than one epoch's supports, its own supports of the previous epoch are gone).
"""

from __future__ import annotations

import math

import torch


def top_fraction(scores: torch.Tensor, mask: torch.Tensor, fraction: float) -> list[torch.Tensor]:
    """Per bag, the indices of the top ⌈fraction · n_valid⌉ scores (highest first)."""
    out = []
    for row, valid in zip(scores, mask, strict=True):
        n = int(valid.sum())
        k = max(1, math.ceil(fraction * n))
        out.append(torch.topk(row.masked_fill(~valid, -math.inf), k).indices)
    return out


class SupportBank:
    """Ring buffers of shape (capacity, dim), one per class; contents never require gradients."""

    def __init__(
        self, n_classes: int, capacity: int, dim: int, device: torch.device | None = None
    ) -> None:
        if capacity < 1:
            raise ValueError(f"bank capacity must be ≥ 1, got {capacity}")
        self.capacity = capacity
        self.store = torch.zeros(n_classes, capacity, dim, device=device)
        self.count = [0] * n_classes  # vectors ever pushed per class

    def push(self, label: int, vectors: torch.Tensor) -> None:
        """Append vectors (k, dim) to class `label`, dropping the oldest beyond capacity."""
        vectors = vectors.detach()
        for v in vectors[-self.capacity :] if len(vectors) > self.capacity else vectors:
            self.store[label, self.count[label] % self.capacity] = v
            self.count[label] += 1

    def size(self, label: int) -> int:
        """How many supports class `label` holds now."""
        return min(self.count[label], self.capacity)

    def supports(self, label: int) -> torch.Tensor:
        """The class's supports, oldest first, as a (size, dim) tensor without gradient."""
        n, start = self.size(label), self.count[label] % self.capacity
        if n < self.capacity:
            return self.store[label, :n].clone()
        return torch.cat([self.store[label, start:], self.store[label, :start]])
