"""MIL networks on padded bags (x (B, n, d), mask (B, n)) → bag logit and instance scores.

Every network embeds instances with the same encoder (Linear → ReLU, width ``hidden``) and
returns a `MILOutput`: the bag logit, the instance score used for localisation, the attention
(None for pooling models) and the embeddings h the grounding methods compare with supports.

* ``mean_pool`` / ``max_pool``: a linear instance head s_i = w·h_i + c; the bag logit is the
  mean (exactly the head on the mean embedding) or the max of s_i; the instance score is s_i.
* ``abmil``: gated attention (Ilse et al. 2018, `reprolab.models.abmil`, shared with nicer),
  α = softmax_i(wᵀ(tanh(V h_i) ⊙ σ(U h_i))), logit from Σ α_i h_i; instance score α.
* ``clam_sb``: ABMIL plus CLAM-SB's instance-level clustering loss (Lu et al. 2021): an
  instance classifier learns top-k attended instances of a positive bag as evidence and its
  bottom-k as background, and the top-k of a negative bag as background (k = ⌈k_fraction·n⌉;
  cross-entropy instead of the smooth SVM). Instance score α.
* ``transmil``: a class token and ``layers`` pre-norm transformer blocks over the instances
  (TransMIL-like; neither the PPEG positional module nor Nyström attention is used: bags of
  ≤ 64 instances need no linear-time attention, and SynthMIL has no spatial order). Logit from
  the class token; instance score = the class token's attention to each instance in the last
  block, averaged over heads and renormalised over the instances.
* grounding methods (``nn_grounding``, ``balanced_ot``, ``ssg_uot``) are ABMIL networks; only
  their training loss differs (see `train`), and their instance score is the attention α of
  the trained network, so the table compares what the grounding signal taught the attention.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from torch import nn

from reprolab.models.abmil import Encoder, GatedABMIL, MILOutput


class PoolMIL(nn.Module):
    """Mean- or max-pooling of linear instance logits."""

    def __init__(self, dim: int, hidden: int, dropout: float, mode: str) -> None:
        super().__init__()
        self.encoder = Encoder(dim, hidden, dropout)
        self.head = nn.Linear(hidden, 1)
        self.mode = mode

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> MILOutput:
        """Bag logit = mean or max of the valid instance logits."""
        h = self.encoder(x)
        s = self.head(h).squeeze(-1)
        if self.mode == "mean":
            logit = (s * mask).sum(-1) / mask.sum(-1)
        else:
            logit = s.masked_fill(~mask, -math.inf).amax(-1)
        return MILOutput(logit, s, None, h)


class CLAMSB(GatedABMIL):
    """Gated ABMIL with CLAM-SB's instance clustering head for the positive class."""

    def __init__(
        self, dim: int, hidden: int, attention_dim: int, dropout: float, k_fraction: float
    ) -> None:
        super().__init__(dim, hidden, attention_dim, dropout)
        self.instance_head = nn.Linear(hidden, 2)
        self.k_fraction = k_fraction

    def instance_loss(self, out: MILOutput, mask: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """Cross-entropy of pseudo-labelled top-k (and, for positive bags, bottom-k) instances."""
        losses = []
        for alpha, h, valid, label in zip(out.attention, out.h, mask, y, strict=True):
            k = max(1, math.ceil(self.k_fraction * int(valid.sum())))
            top = torch.topk(alpha.masked_fill(~valid, -math.inf), k).indices
            if label > 0.5:
                bottom = torch.topk(alpha.masked_fill(~valid, math.inf), k, largest=False).indices
                idx = torch.cat([top, bottom])
                target = torch.cat([torch.ones(k), torch.zeros(k)]).long().to(h.device)
            else:
                idx, target = top, torch.zeros(k, dtype=torch.long, device=h.device)
            losses.append(F.cross_entropy(self.instance_head(h[idx]), target))
        return torch.stack(losses).mean()


class Block(nn.Module):
    """Pre-norm transformer block that also returns its attention weights (B, heads, q, k)."""

    def __init__(self, width: int, heads: int, ff: int, dropout: float) -> None:
        super().__init__()
        self.norm1 = nn.LayerNorm(width)
        self.attn = nn.MultiheadAttention(width, heads, dropout=dropout, batch_first=True)
        self.norm2 = nn.LayerNorm(width)
        self.mlp = nn.Sequential(nn.Linear(width, ff), nn.GELU(), nn.Linear(ff, width))

    def forward(
        self, z: torch.Tensor, pad: torch.Tensor, queries: int | None = None
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Self-attention with a key padding mask (True = padded), then the MLP.

        With `queries` only the first `queries` tokens are updated (the last block needs the
        class token alone, which gives the same logit at a fraction of the cost).
        """
        kv = self.norm1(z)
        q = kv if queries is None else kv[:, :queries]
        att, weights = self.attn(
            q, kv, kv, key_padding_mask=pad, need_weights=True, average_attn_weights=False
        )
        z = (z if queries is None else z[:, :queries]) + att
        return z + self.mlp(self.norm2(z)), weights


class TransMILLite(nn.Module):
    """Class token + transformer blocks over instances; logit from the class token."""

    def __init__(
        self, dim: int, hidden: int, dropout: float, layers: int, heads: int, ff: int
    ) -> None:
        super().__init__()
        self.encoder = Encoder(dim, hidden, dropout)
        self.cls = nn.Parameter(torch.zeros(1, 1, hidden))
        self.blocks = nn.ModuleList(Block(hidden, heads, ff, dropout) for _ in range(layers))
        self.norm = nn.LayerNorm(hidden)
        self.head = nn.Linear(hidden, 1)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> MILOutput:
        """Instance score: class-token attention of the last block, mean over heads."""
        h = self.encoder(x)
        z = torch.cat([self.cls.expand(len(x), -1, -1), h], 1)
        pad = torch.cat([torch.zeros_like(mask[:, :1]), ~mask], 1)
        weights = None
        for i, block in enumerate(self.blocks):
            z, weights = block(z, pad, 1 if i == len(self.blocks) - 1 else None)
        score = weights[:, :, 0, 1:].mean(1)
        score = score / score.sum(-1, keepdim=True)  # renormalised over the instances
        return MILOutput(self.head(self.norm(z[:, 0])).squeeze(-1), score, score, h)


POOLING = ("mean_pool", "max_pool")
ATTENTION = ("abmil", "clam_sb", "transmil")
GROUNDING = ("nn_grounding", "balanced_ot", "ssg_uot")
METHODS = (*POOLING, *ATTENTION, *GROUNDING)


def build_model(method: str, dim: int, model: dict) -> nn.Module:
    """The network of `method` for instances of dimension `dim` (params: the ``model`` dict)."""
    hidden, dropout = model["hidden"], model["dropout"]
    if method in POOLING:
        return PoolMIL(dim, hidden, dropout, method.split("_")[0])
    if method == "clam_sb":
        return CLAMSB(dim, hidden, model["attention_dim"], dropout, model["clam"]["k_fraction"])
    if method == "transmil":
        t = model["transmil"]
        return TransMILLite(dim, hidden, dropout, t["layers"], t["heads"], t["ff"])
    if method in ("abmil", *GROUNDING):
        return GatedABMIL(dim, hidden, model["attention_dim"], dropout)
    raise ValueError(f"unknown method {method!r}; expected one of {METHODS}")
