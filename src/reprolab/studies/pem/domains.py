"""Source domains and their output nonlinearities: Euclidean projections onto the domain.

Two domains: ``box`` (the nonnegative antisparse box [0, 1]^n, projection = clipping) and
``simplex`` (the probability simplex {y ≥ 0, Σ y = 1}, projection by the sort-based algorithm of
Held et al. / Duchi et al.). A projection Π onto a closed convex set makes ½‖Π(u) − u‖² a
differentiable function of u with gradient u − Π(u); PEM's error neurons carry exactly that
residual, so the choice of domain changes only this one function.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

Projection = Callable[[np.ndarray], np.ndarray]


def project_box(u: np.ndarray) -> np.ndarray:
    """Row-wise projection onto [0, 1]^n (clipping)."""
    return np.clip(u, 0.0, 1.0)


def project_simplex(u: np.ndarray) -> np.ndarray:
    """Row-wise Euclidean projection onto the probability simplex {y ≥ 0, Σ_i y_i = 1}."""
    u = np.atleast_2d(np.asarray(u, dtype=float))
    n = u.shape[1]
    ordered = -np.sort(-u, axis=1)
    cumulative = np.cumsum(ordered, axis=1) - 1.0
    ranks = np.arange(1, n + 1)
    support = ordered - cumulative / ranks > 0
    k = n - np.argmax(support[:, ::-1], axis=1)  # largest rank with a positive entry
    theta = cumulative[np.arange(u.shape[0]), k - 1] / k
    return np.maximum(u - theta[:, None], 0.0)


PROJECTIONS: dict[str, Projection] = {"box": project_box, "simplex": project_simplex}


def domain_center(domain: str, n: int) -> np.ndarray:
    """The centre of a domain (box: 0.5 per coordinate; simplex: 1/n), where outputs start."""
    projection(domain)
    return np.full(n, 0.5 if domain == "box" else 1.0 / n)


def projection(domain: str) -> Projection:
    """The projection of a named domain; ValueError naming the known ones otherwise."""
    if domain not in PROJECTIONS:
        raise ValueError(f"pem: unknown domain {domain!r}; known: {', '.join(PROJECTIONS)}")
    return PROJECTIONS[domain]
