"""The conditioner network of the coupling layers and the joining of a context to its input.

Choices: SiLU activations, so a flow's log-density is smooth in x and in the context (its
gradients, used for guidance or distillation, have no kinks); the last layer starts at zero, so
the conditioner outputs zeros and the layer it drives starts as the identity; the context is
concatenated to the input, and a layer built without a context refuses one (and vice versa), so
a forgotten or stray condition is an error rather than a silently unconditional flow.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn


def join_context(x: torch.Tensor, context: torch.Tensor | None, context_dim: int) -> torch.Tensor:
    """x (batch, d) with the context (batch, context_dim) appended; a ValueError when the
    context is missing, unexpected or of the wrong shape."""
    if context_dim == 0:
        if context is not None:
            raise ValueError("this layer was built without a context (context_dim=0)")
        return x
    if context is None:
        raise ValueError(f"this layer needs a context of {context_dim} features")
    if context.shape != (x.shape[0], context_dim):
        raise ValueError(
            f"context of shape {tuple(context.shape)}, expected ({x.shape[0]}, {context_dim})"
        )
    return torch.cat([x, context], -1)


class MLP(nn.Module):
    """Linear → SiLU layers of widths ``hidden`` then a zero-initialised linear output, on the
    input joined with the context."""

    def __init__(
        self, in_features: int, out_features: int, hidden: Sequence[int], context_dim: int = 0
    ) -> None:
        super().__init__()
        self.context_dim = context_dim
        widths = [in_features + context_dim, *hidden]
        layers: list[nn.Module] = []
        for width_in, width_out in zip(widths[:-1], widths[1:], strict=True):
            layers += [nn.Linear(width_in, width_out), nn.SiLU()]
        last = nn.Linear(widths[-1], out_features)
        nn.init.zeros_(last.weight)
        nn.init.zeros_(last.bias)
        self.net = nn.Sequential(*layers, last)

    def forward(self, x: torch.Tensor, context: torch.Tensor | None = None) -> torch.Tensor:
        """(batch, in_features) and (batch, context_dim) → (batch, out_features)."""
        return self.net(join_context(x, context, self.context_dim))
