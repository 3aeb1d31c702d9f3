"""Batched log-domain (un)balanced Sinkhorn and the retained source mass used for grounding.

Problem, per bag k (source = the bag's instances, target = a support set):

    γ* = argmin ⟨γ, C⟩ + ε KL(γ | a⊗b) + ρ KL(γ1 | a) + ρ KL(γᵀ1 | b)

solved by fixed-count scaling iterations in the log domain, with the kernel of POT's
``reg_type="kl"`` (reference measure a⊗b, so log K = −C/ε + log a ⊗ log b):

    log u ← fi · (log a − LSE_j(log K + log v)),   log v ← fi · (log b − LSE_i(log K + log u)),
    fi = ρ / (ρ + ε)   (fi = 1 for ρ = ∞: plain balanced Sinkhorn)

The card writes the updates with −C/ε alone; that is the kernel of ``reg_type="entropy"``; we
keep a⊗b in the kernel because it is the reference measure of the objective the card states
(with uniform a, b the two differ by a constant factor 1/(nm) in K, which changes how much
mass survives). u and v start at 1 and the u update comes first, as in
``ot.unbalanced.sinkhorn_knopp_unbalanced``, so a fixed iteration count matches POT exactly.

Choices: the cost is divided by its mean over the valid (unpadded) entries of each bag, so ε
and ρ are scale-free; padded entries carry a mask and receive zero plan mass. The retained
source mass g_i = (γ1)_i / a_i is ≈ 1 for an instance the supports can absorb and ≈ 0 for one
that unbalanced transport prefers to destroy.
"""

from __future__ import annotations

import math

import torch

_NEG = -1e9  # finite stand-in for log 0: keeps masked rows free of inf − inf


def squared_cost(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
    """Pairwise squared Euclidean distances, (B, n, d) × (B or 1, m, d) → (B, n, m)."""
    sq = (x * x).sum(-1, keepdim=True) + (y * y).sum(-1).unsqueeze(-2) - 2 * x @ y.transpose(-1, -2)
    return sq.clamp_min(0.0)


def normalise_cost(cost: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Divide each bag's cost by its mean over valid entries (mask (B, n, m) of bools)."""
    total = (cost * mask).sum((-1, -2), keepdim=True)
    count = mask.sum((-1, -2), keepdim=True).clamp_min(1)
    return cost / (total / count).clamp_min(1e-12)


def sinkhorn(
    cost: torch.Tensor,
    a: torch.Tensor,
    b: torch.Tensor,
    eps: float,
    rho: float,
    iterations: int,
    normalise: bool = True,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Return (plan (B, n, m), retained source mass g (B, n)) for batched histograms.

    `a` (B, n) and `b` (B, m) are non-negative weights; zero entries mark padding and get zero
    plan mass and g = 0. ``rho = math.inf`` gives the balanced solver. With ``normalise`` the
    cost is first divided by its mean over valid entries.
    """
    if cost.dim() != 3 or a.shape != cost.shape[:2] or b.shape != (cost.shape[0], cost.shape[2]):
        raise ValueError(
            f"sinkhorn: cost (B, n, m) with a (B, n) and b (B, m) expected, got "
            f"{tuple(cost.shape)}, {tuple(a.shape)}, {tuple(b.shape)}"
        )
    if eps <= 0 or rho <= 0 or iterations < 1:
        raise ValueError(f"sinkhorn: need eps > 0, rho > 0, iterations ≥ 1 (got {eps}, {rho})")
    mask_a, mask_b = a > 0, b > 0
    mask = mask_a.unsqueeze(-1) & mask_b.unsqueeze(-2)
    if normalise:
        cost = normalise_cost(cost, mask)
    log_a = torch.where(mask_a, a.clamp_min(1e-30).log(), _NEG)
    log_b = torch.where(mask_b, b.clamp_min(1e-30).log(), _NEG)
    log_k = -cost / eps + log_a.unsqueeze(-1) + log_b.unsqueeze(-2)
    log_k = torch.where(mask, log_k, _NEG)
    fi = 1.0 if math.isinf(rho) else rho / (rho + eps)
    log_u = torch.zeros_like(log_a)
    log_v = torch.zeros_like(log_b)
    for _ in range(iterations):
        log_u = fi * (log_a - torch.logsumexp(log_k + log_v.unsqueeze(-2), dim=-1))
        log_v = fi * (log_b - torch.logsumexp(log_k + log_u.unsqueeze(-1), dim=-2))
    plan = torch.exp(log_u.unsqueeze(-1) + log_k + log_v.unsqueeze(-2)) * mask
    g = torch.where(mask_a, plan.sum(-1) / a.clamp_min(1e-30), 0.0)
    return plan, g


def retained_mass(
    h: torch.Tensor,
    mask: torch.Tensor,
    supports: torch.Tensor,
    eps: float,
    rho: float,
    iterations: int,
) -> torch.Tensor:
    """Grounding strength g (B, n) of padded bags h (B, n, d) against one support set (m, d).

    Source a is uniform over each bag's valid instances (`mask` (B, n)), target b uniform over
    the supports; the cost is the squared Euclidean distance normalised by its mean.
    """
    a = mask.to(h.dtype) / mask.sum(-1, keepdim=True).clamp_min(1).to(h.dtype)
    m = supports.shape[0]
    b = torch.full((h.shape[0], m), 1.0 / m, dtype=h.dtype, device=h.device)
    cost = squared_cost(h, supports.unsqueeze(0))
    return sinkhorn(cost, a, b, eps, rho, iterations)[1]
