"""Mixture-of-experts adapters with a router, on the blocks of a frozen `transformers` ViT.

Each adapted block's output h [B, L, D] becomes h + Σ_e w_e A_e(h), with E bottleneck experts
A_e(h) = W_up,e gelu(W_down,e h) and one weight vector w [B, E] per image (instance routing): the
router reads the block's class token, p(x) = softmax(W_r h_cls / τ). What w is depends on the
method: p itself (plain MoE), the trust-region projection q of p around an anchor, or TRPR's
fusion γ p + (1 − γ) q with the gate γ(x) = σ(w_γ · h_cls + b_γ). The fusion of the two paths'
outputs, γ Σ p_e A_e + (1 − γ) Σ q_e A_e, is the adapter applied with the fused weights, since
the adapter is linear in its weights.

Choices: GELU in the bottleneck, not ReLU: an adapter after the last block reaches the loss
through the class token alone, and a ReLU whose units all go dead there (one task of Adam steps
did it in a test) would stop the adapter training for good. W_up starts at zero, so an
untrained adapter leaves the backbone's output exactly as it was; the router starts at zero too
(uniform routing); the gate's bias starts at −2 (the card's: trust the projected path). The
frozen blocks before the first adapted one are computed once per image and cached by the caller
(`FrozenViT.stem`): they never change.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from transformers import ViTModel

Weights = Callable[[int, torch.Tensor, torch.Tensor], torch.Tensor]
"""Per adapted block: (block index, router log-probabilities [B, E], class token [B, D]) → the
weights [B, E] the experts are mixed with."""


@dataclass(frozen=True)
class Routed:
    """What the adapted blocks give: the final layer-normed class token [B, D], and per adapted
    block the class token its router read [A, B, D], the router's log-probabilities [A, B, E]
    and the weights the experts were mixed with [A, B, E]."""

    features: torch.Tensor
    tokens: torch.Tensor
    router: torch.Tensor
    weights: torch.Tensor


class MoEAdapter(nn.Module):
    """E bottleneck experts and a router on one block's hidden states."""

    def __init__(self, dim: int, experts: int, rank: int, temperature: float = 1.0) -> None:
        super().__init__()
        scale = dim**-0.5
        self.down = nn.Parameter(torch.randn(experts, dim, rank) * scale)
        self.up = nn.Parameter(torch.zeros(experts, rank, dim))
        self.router = nn.Linear(dim, experts)
        nn.init.zeros_(self.router.weight)
        nn.init.zeros_(self.router.bias)
        self.temperature = temperature

    @property
    def experts(self) -> int:
        return int(self.down.shape[0])

    def route(self, cls: torch.Tensor) -> torch.Tensor:
        """Router log-probabilities [B, E] of the class tokens `cls` [B, D]."""
        return torch.log_softmax(self.router(cls) / self.temperature, -1)

    def forward(self, hidden: torch.Tensor, weights: torch.Tensor) -> torch.Tensor:
        """Σ_e w_e A_e(h) [B, L, D] for `hidden` [B, L, D] and `weights` [B, E]: the experts'
        down-projections side by side as one [D, E·r] matrix, each expert's block of the
        bottleneck scaled by its weight, then one [E·r, D] up-projection (two matrix products,
        about four times faster than the equivalent einsums on a CPU)."""
        experts, dim, rank = self.down.shape
        inner = F.gelu(hidden @ self.down.permute(1, 0, 2).reshape(dim, experts * rank))
        scaled = inner * weights.repeat_interleave(rank, dim=1)[:, None, :]
        return scaled @ self.up.reshape(experts * rank, dim)


class FusionGate(nn.Module):
    """γ(x) = σ(w_γ · h_cls + b_γ) [B]: the share of the instance path in TRPR's fusion."""

    def __init__(self, dim: int, bias: float = -2.0) -> None:
        super().__init__()
        self.linear = nn.Linear(dim, 1)
        nn.init.zeros_(self.linear.weight)
        nn.init.constant_(self.linear.bias, bias)

    def forward(self, cls: torch.Tensor) -> torch.Tensor:
        return torch.sigmoid(self.linear(cls))[:, 0]


def frozen_stem(backbone: ViTModel, first_adapted: int, pixels: torch.Tensor) -> torch.Tensor:
    """Hidden states [B, L, D] of `pixels` entering block `first_adapted` of the frozen
    `backbone`: what every row's adapted blocks start from."""
    with torch.no_grad():
        hidden = backbone.embeddings(pixels)
        for block in backbone.layers[:first_adapted]:
            hidden = block(hidden)
    return hidden


class FrozenViT(nn.Module):
    """A frozen `ViTModel` whose blocks from `first_adapted` on carry MoE adapters.

    `stem(pixels)` runs the embeddings and the blocks before `first_adapted` (cacheable);
    `head(stem_output, weights)` runs the adapted blocks, adding each block's adapter with the
    weights `weights` picks, and returns a `Routed`.
    """

    def __init__(
        self, backbone: ViTModel, first_adapted: int, experts: int, rank: int, temperature: float
    ) -> None:
        super().__init__()
        blocks = len(backbone.layers)
        if not 0 <= first_adapted < blocks:
            raise ValueError(f"first_adapted {first_adapted}: the ViT has blocks 0..{blocks - 1}")
        self.backbone = backbone.requires_grad_(False).eval()
        self.first_adapted = first_adapted
        dim = backbone.config.hidden_size
        self.adapters = nn.ModuleList(
            MoEAdapter(dim, experts, rank, temperature) for _ in range(blocks - first_adapted)
        )

    def stem(self, pixels: torch.Tensor) -> torch.Tensor:
        """Hidden states [B, L, D] entering the first adapted block."""
        return frozen_stem(self.backbone, self.first_adapted, pixels)

    def head(
        self, hidden: torch.Tensor, weights: Weights, adapters: nn.ModuleList | None = None
    ) -> Routed:
        """The adapted blocks on `hidden` (from `stem`), with this model's adapters or the
        given copy of them (`adapters`: the adapters as they were at some earlier point)."""
        tokens, routes, used = [], [], []
        blocks: Sequence[nn.Module] = self.backbone.layers[self.first_adapted :]
        chosen = self.adapters if adapters is None else adapters
        for index, (block, adapter) in enumerate(zip(blocks, chosen, strict=True)):
            hidden = block(hidden)
            cls = hidden[:, 0]
            log_p = adapter.route(cls)
            mixing = weights(index, log_p, cls)
            tokens.append(cls)
            routes.append(log_p)
            used.append(mixing)
            hidden = hidden + adapter(hidden, mixing)
        features = self.backbone.layernorm(hidden)[:, 0]
        return Routed(features, torch.stack(tokens), torch.stack(routes), torch.stack(used))


def plain_routing(index: int, log_p: torch.Tensor, cls: torch.Tensor) -> torch.Tensor:
    """The router's own distribution: plain MoE."""
    return log_p.exp()
