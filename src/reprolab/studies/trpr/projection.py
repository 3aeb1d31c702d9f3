"""The KL trust-region projection of a routing distribution around an anchor.

Given a router's distribution p over E experts and an anchor a (a class's routing), TRPR routes
by the I-projection of p onto the ball {q : KL(q ‖ a) ≤ δ}:

    q* = argmin_q KL(q ‖ p)   subject to   KL(q ‖ a) ≤ δ.

When KL(p ‖ a) ≤ δ, p is feasible and q* = p. Otherwise the constraint binds, and Lagrangian
stationarity, log q = (log p + λ log a) / (1 + λ) + const, puts q* on the geometric path
q_t ∝ p^(1−t) a^t with t = λ / (1 + λ) ∈ (0, 1), where KL(q_t ‖ a) = δ. KL(q_t ‖ a) falls
monotonically from KL(p ‖ a) at t = 0 to 0 at t = 1 (its derivative in t is
−(1 − t)·Var_{q_t}(log p/a) ≤ 0), so bisection on t finds it.

Choices: everything runs in log space (routing probabilities can underflow); t* is found without
gradients, `steps` halvings of [0, 1] (30 give t to 1e-9), and the returned point is the upper
end of the last interval, so the result is always feasible (KL ≤ δ, equal to δ up to the
bisection's resolution); q* = softmax((1 − t*) log p + t* log a) stays differentiable in p (and
a), with t* a constant, the card's "t* is computed without gradients".
"""

from __future__ import annotations

import torch


def kl_divergence(log_q: torch.Tensor, log_a: torch.Tensor) -> torch.Tensor:
    """KL(q ‖ a) over the last dimension, from log-probabilities [..., E]."""
    return (log_q.exp() * (log_q - log_a)).sum(-1)


def geometric_path(log_p: torch.Tensor, log_a: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """log q_t for q_t ∝ p^(1−t) a^t; `t` [...] broadcasts over the experts."""
    return torch.log_softmax((1.0 - t[..., None]) * log_p + t[..., None] * log_a, -1)


def projection_weight(
    log_p: torch.Tensor, log_a: torch.Tensor, delta: float, steps: int = 30
) -> torch.Tensor:
    """t* [...] of each row: 0 where KL(p ‖ a) ≤ `delta` (inactive), else the smallest t (to
    2^−steps) with KL(q_t ‖ a) ≤ `delta`. Computed without gradients."""
    if delta <= 0:
        raise ValueError(f"delta {delta}: the trust region's radius must be positive")
    with torch.no_grad():
        log_p, log_a = log_p.detach(), log_a.detach()
        active = kl_divergence(log_p, log_a) > delta
        low = torch.zeros(log_p.shape[:-1], dtype=log_p.dtype, device=log_p.device)
        high = torch.ones_like(low)
        for _ in range(steps):
            middle = (low + high) / 2
            outside = kl_divergence(geometric_path(log_p, log_a, middle), log_a) > delta
            low = torch.where(outside, middle, low)
            high = torch.where(outside, high, middle)
        return torch.where(active, high, torch.zeros_like(high))


def project(
    log_p: torch.Tensor, log_a: torch.Tensor, delta: float, steps: int = 30
) -> torch.Tensor:
    """log q* [..., E], the I-projection of p onto {q : KL(q ‖ a) ≤ `delta`} (module
    docstring); p itself where it lies inside. `log_a` broadcasts against `log_p`."""
    log_a = log_a.expand_as(log_p)
    t = projection_weight(log_p, log_a, delta, steps)
    return torch.where((t > 0)[..., None], geometric_path(log_p, log_a, t), log_p)
