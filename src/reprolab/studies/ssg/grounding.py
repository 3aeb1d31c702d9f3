"""Grounding targets g (B, n) of bag instances against the label-consistent supports, and the loss.

* ``ssg_uot``: retained source mass of unbalanced transport to the supports (`uot`); nuisance
  that no support can absorb loses its mass.
* ``balanced_ot``: the same with ρ = ∞ (the card's ablation). Balanced transport must move all
  mass, so g ≡ 1 up to the last iteration's row error: its target is (almost) uniform attention.
  We keep this literal reading because it isolates what mass destruction adds.
* ``nn_grounding``: max cosine similarity to any support, clipped at 0 (no transport).

The loss is KL(g/Σg ‖ α) per bag (0 log 0 = 0), with g detached: the grounding signal is a
target for the attention, not a path for gradients into the embeddings.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from reprolab.studies.ssg.uot import retained_mass


def grounding(
    method: str, h: torch.Tensor, mask: torch.Tensor, supports: torch.Tensor, params: dict
) -> torch.Tensor:
    """g (B, n) ≥ 0 (0 on padding) of embeddings h (B, n, e) against supports (m, e)."""
    with torch.no_grad():
        h = h.detach()
        if method == "nn_grounding":
            cos = F.normalize(h, dim=-1) @ F.normalize(supports, dim=-1).T
            return cos.amax(-1).clamp_min(0.0) * mask
        if method in ("ssg_uot", "balanced_ot"):
            rho = math.inf if method == "balanced_ot" else params["rho"]
            return retained_mass(h, mask, supports, params["eps"], rho, params["iterations"])
    raise ValueError(f"grounding: unknown method {method!r}")


def grounding_kl(g: torch.Tensor, alpha: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean over bags of KL(g/Σg ‖ α); bags whose g sums to 0 contribute 0."""
    total = g.sum(-1, keepdim=True)
    p = torch.where(total > 0, g / total.clamp_min(1e-30), 0.0) * mask
    log_alpha = torch.log(alpha.clamp_min(1e-30))
    kl = (torch.xlogy(p, p) - p * log_alpha).sum(-1)
    return kl.mean()
