"""The KL trust-region projection: on the ball's boundary when active, the identity inside,
the minimiser of KL(q ‖ p) over the ball (against a generic solver), differentiable in p only."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from scipy.optimize import minimize

from reprolab.studies.trpr.projection import (
    geometric_path,
    kl_divergence,
    project,
    projection_weight,
)


def log_simplex(rows: int, experts: int, seed: int, spread: float = 2.0) -> torch.Tensor:
    generator = torch.Generator().manual_seed(seed)
    logits = spread * torch.randn(rows, experts, generator=generator, dtype=torch.float64)
    return torch.log_softmax(logits, -1)


@pytest.mark.parametrize("delta", [0.02, 0.1, 0.5])
def test_an_active_projection_lands_on_the_boundary_and_an_inactive_one_is_the_identity(delta):
    log_p = log_simplex(400, 6, 0)
    noise = torch.randn(400, 6, generator=torch.Generator().manual_seed(1), dtype=torch.float64)
    scale = torch.linspace(0.0, 2.0, 400, dtype=torch.float64)[:, None]  # anchors near and far
    log_a = torch.log_softmax(log_p + scale * noise, -1)
    log_q = project(log_p, log_a, delta)
    before, after = kl_divergence(log_p, log_a), kl_divergence(log_q, log_a)
    active = before > delta
    assert active.any() and (~active).any()
    assert torch.all(after[active] <= delta)
    assert torch.allclose(after[active], torch.full_like(after[active], delta), atol=1e-7)
    assert torch.equal(log_q[~active], log_p[~active])


def test_the_kl_to_the_anchor_falls_along_the_geometric_path():
    log_p, log_a = log_simplex(50, 5, 2), log_simplex(50, 5, 3)
    path = torch.stack(
        [
            kl_divergence(geometric_path(log_p, log_a, torch.full((50,), t)), log_a)
            for t in np.linspace(0, 1, 41)
        ]
    )
    assert torch.all(path[1:] <= path[:-1] + 1e-12)
    assert torch.allclose(path[-1], torch.zeros(50, dtype=path.dtype), atol=1e-12)


def solver_minimum(p: np.ndarray, a: np.ndarray, delta: float) -> float:
    """min KL(q ‖ p) over the simplex with KL(q ‖ a) ≤ delta, by SLSQP from several starts."""

    def kl(q: np.ndarray, r: np.ndarray) -> float:
        q = np.clip(q, 1e-12, None)
        return float(np.sum(q * np.log(q / r)))

    best = np.inf
    for start in (a, (a + p) / 2, np.full_like(p, 1 / len(p))):
        found = minimize(
            lambda q: kl(q, p),
            start,
            method="SLSQP",
            bounds=[(1e-12, 1.0)] * len(p),
            constraints=[
                {"type": "eq", "fun": lambda q: np.sum(q) - 1.0},
                {"type": "ineq", "fun": lambda q: delta - kl(q, a)},
            ],
            options={"ftol": 1e-12, "maxiter": 500},
        )
        if found.success and kl(found.x, a) <= delta + 1e-7:
            best = min(best, kl(found.x, p))
    return best


def test_the_projection_is_the_minimiser_a_generic_solver_finds():
    delta = 0.1
    log_p, log_a = log_simplex(20, 4, 4), log_simplex(20, 4, 5)
    log_q = project(log_p, log_a, delta)
    ours = kl_divergence(log_q, log_p).numpy()
    checked = 0
    for row in range(20):
        p, a = log_p[row].exp().numpy(), log_a[row].exp().numpy()
        reference = solver_minimum(p, a, delta)
        if np.isfinite(reference):
            assert ours[row] <= reference + 1e-6, row
            checked += 1
    assert checked >= 15


def test_no_feasible_point_is_closer_to_p():
    delta = 0.2
    log_p, log_a = log_simplex(30, 5, 6), log_simplex(30, 5, 7)
    closest = kl_divergence(project(log_p, log_a, delta), log_p)
    generator = torch.Generator().manual_seed(8)
    for _ in range(200):
        candidate = torch.log_softmax(
            log_a + 0.5 * torch.randn(log_a.shape, generator=generator, dtype=log_a.dtype), -1
        )
        feasible = kl_divergence(candidate, log_a) <= delta
        distance = kl_divergence(candidate, log_p)
        assert torch.all(closest[feasible] <= distance[feasible] + 1e-9)


def test_gradients_reach_p_but_not_the_projection_weight():
    logits = torch.randn(8, 6, generator=torch.Generator().manual_seed(9), requires_grad=True)
    log_a = log_simplex(8, 6, 10).float()
    log_p = torch.log_softmax(logits, -1)
    t = projection_weight(log_p, log_a, 0.05)
    assert not t.requires_grad and (t > 0).any()
    log_q = project(log_p, log_a, 0.05)
    (log_q.exp() * torch.arange(6.0)).sum().backward()
    assert logits.grad is not None and logits.grad.abs().sum() > 0


def test_a_non_positive_radius_is_refused():
    with pytest.raises(ValueError, match="radius must be positive"):
        project(log_simplex(2, 3, 0), log_simplex(2, 3, 1), 0.0)
