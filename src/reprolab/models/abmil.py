"""Gated-attention MIL (ABMIL) on padded bags, shared by the MIL studies (ssg, nicer).

A bag is x (B, n, d) with a mask (B, n) of its valid instances. Instances are embedded by
Linear → ReLU (→ dropout) of width ``hidden``; gated attention (Ilse et al. 2018)
α = softmax_i(wᵀ(tanh(V h_i) ⊙ σ(U h_i)) + log w_i) pools them, and a linear head on Σ α_i h_i
gives the bag logit. The optional instance weights w_i (a condensed bag's prototype weights,
summing to one per bag) enter as log w_i on the attention logits, so a prototype that stands
for m identical instances attends exactly as those m instances would; without weights every
instance counts once.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn


@dataclass
class MILOutput:
    """Bag logits (B,), instance scores (B, n), attention (B, n) or None, embeddings (B, n, e)."""

    logit: torch.Tensor
    score: torch.Tensor
    attention: torch.Tensor | None
    h: torch.Tensor


def masked_softmax(logits: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Softmax over the valid instances of each bag; padded entries get exactly 0."""
    return torch.softmax(logits.masked_fill(~mask, -math.inf), dim=-1)


class Encoder(nn.Module):
    """Instance embedding shared by every network: Linear → ReLU (→ dropout)."""

    def __init__(self, dim: int, hidden: int, dropout: float) -> None:
        super().__init__()
        self.net = nn.Sequential(nn.Linear(dim, hidden), nn.ReLU(), nn.Dropout(dropout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, n, d) → (B, n, hidden)."""
        return self.net(x)


class GatedABMIL(nn.Module):
    """Gated attention MIL; the base of CLAM-SB-lite, of the grounding methods and of nicer's
    classifier on condensed bags."""

    def __init__(self, dim: int, hidden: int, attention_dim: int, dropout: float) -> None:
        super().__init__()
        self.encoder = Encoder(dim, hidden, dropout)
        self.v = nn.Linear(hidden, attention_dim)
        self.u = nn.Linear(hidden, attention_dim)
        self.w = nn.Linear(attention_dim, 1)
        self.head = nn.Linear(hidden, 1)

    def forward(
        self, x: torch.Tensor, mask: torch.Tensor, weights: torch.Tensor | None = None
    ) -> MILOutput:
        """α over the valid instances (shifted by log `weights`), logit from Σ α_i h_i."""
        h = self.encoder(x)
        a = self.w(torch.tanh(self.v(h)) * torch.sigmoid(self.u(h))).squeeze(-1)
        if weights is not None:
            a = a + torch.log(weights.clamp_min(torch.finfo(weights.dtype).tiny))
        alpha = masked_softmax(a, mask)
        logit = self.head((alpha.unsqueeze(-1) * h).sum(1)).squeeze(-1)
        return MILOutput(logit, alpha, alpha, h)
