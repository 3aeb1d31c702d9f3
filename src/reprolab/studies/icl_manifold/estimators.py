"""Closed-form in-context estimators: the oracle tangent local-polynomial fit and the baselines.

Every estimator predicts the value at each query of a `Prompts` batch from its n context points
only, vectorised over prompts and queries, and returns (P, q) predictions.

* `oracle_lp`: knows the query's component, its intrinsic dimension d and every point's
  coordinates on the unit circle/sphere, and uses the geodesic normal (log-map) coordinates of
  the same-component points (`geodesic_coordinates`; in the design card's prototype a
  projection onto the tangent space folded the far side of the manifold onto the near side once
  the bandwidth neared the radius), a degree-2 weighted least-squares fit with the Epanechnikov
  kernel and bandwidth h = h₀ · n_c^{-1/(2α+d)} (angle units, n_c = same-component context
  points, capped at `h_max`); the prediction is the intercept. Where fewer than `min_points`
  same-component points fall inside h, h grows to reach them, and the local degree drops to 1
  or 0 when the kernel's effective sample is too small for it (`local_degree_mask`; without
  this, n = 32 fits blew up in prototype runs; docs/studies/icl_manifold.md).
* `knn`: the mean of the k nearest context targets (ambient distance).
* `nadaraya_watson`: Gaussian-kernel weighted mean (ambient distance, bandwidth h).
* `ambient_local_linear`: Gaussian-kernel weighted affine fit in the ambient coordinates.

Weighted fits add `RIDGE` × (sum of weights) to the diagonal except the intercept, which keeps
them defined when a direction has no spread (a circle's missing second coordinate) and changes
the fit by a relative 1e-9.
"""

from __future__ import annotations

import numpy as np

from reprolab.studies.icl_manifold.manifolds import Prompts

RIDGE = 1e-9


def split(prompts: Prompts) -> tuple[np.ndarray, ...]:
    """(context x, context y, query x): (P, n, D), (P, n), (P, q, D)."""
    n = prompts.n
    return prompts.x[:, :n], prompts.y[:, :n], prompts.x[:, n:]


def squared_distances(prompts: Prompts) -> np.ndarray:
    """Ambient squared distances from each query to each context point, (P, q, n)."""
    ctx, _, qx = split(prompts)
    cross = qx @ np.swapaxes(ctx, -1, -2)
    sq = np.sum(qx**2, -1)[..., None] + np.sum(ctx**2, -1)[:, None, :] - 2.0 * cross
    return np.maximum(sq, 0.0)


def knn(prompts: Prompts, k: int) -> np.ndarray:
    """Mean target of the k nearest context points."""
    _, y, _ = split(prompts)
    k = min(int(k), prompts.n)
    near = np.argpartition(squared_distances(prompts), k - 1, axis=-1)[..., :k]
    targets = np.broadcast_to(y[:, None, :], near.shape[:2] + y.shape[1:])
    return np.take_along_axis(targets, near, -1).mean(-1)


def gaussian_weights(sq: np.ndarray, h: float) -> np.ndarray:
    """exp(−d²/2h²) scaled so that each query's largest weight is 1 (no underflow)."""
    scaled = sq / (2.0 * h * h)
    return np.exp(-(scaled - scaled.min(axis=-1, keepdims=True)))


def nadaraya_watson(prompts: Prompts, h: float) -> np.ndarray:
    """Gaussian-kernel weighted mean of the context targets."""
    _, y, _ = split(prompts)
    w = gaussian_weights(squared_distances(prompts), h)
    return np.einsum("pqn,pn->pq", w, y) / w.sum(-1)


def weighted_intercept(
    features: np.ndarray, w: np.ndarray, y: np.ndarray, active: np.ndarray | None = None
) -> np.ndarray:
    """Intercept of the weighted least-squares fit y ≈ features·β, features[..., 0] = 1.

    features (P, q, n, F), w (P, q, n), y (P, n); `active` (P, q, F) switches coefficients off
    per query (a lower local degree). A ridge of RIDGE · Σw on the non-intercept coefficients
    (and a unit ridge on switched-off ones) keeps rank-deficient designs solvable.
    """
    wf = features * w[..., None]
    gram = np.swapaxes(wf, -1, -2) @ features
    rhs = np.einsum("pqnf,pn->pqf", wf, y)
    ridge = np.ones(features.shape[-1])
    ridge[0] = 0.0
    diag = RIDGE * w.sum(-1)[..., None] * ridge + 1e-300
    if active is not None:
        gram = gram * (active[..., :, None] & active[..., None, :])
        rhs = rhs * active
        diag = np.where(active, diag, 1.0)
    gram = gram + diag[..., None] * np.eye(features.shape[-1])
    return np.linalg.solve(gram, rhs[..., None])[..., 0, 0]


def ambient_local_linear(prompts: Prompts, h: float) -> np.ndarray:
    """Gaussian-kernel weighted affine fit in the ambient coordinates, evaluated at the query."""
    ctx, y, qx = split(prompts)
    diff = ctx[:, None, :, :] - qx[:, :, None, :]
    ones = np.ones(diff.shape[:-1] + (1,))
    w = gaussian_weights(np.einsum("pqnd,pqnd->pqn", diff, diff), h)
    return weighted_intercept(np.concatenate([ones, diff], axis=-1), w, y)


def quadratic_features(u: np.ndarray) -> np.ndarray:
    """[1, u₁, u₂, u₁², u₁u₂, u₂²] of 2-d coordinates u (..., 2)."""
    u1, u2 = u[..., 0], u[..., 1]
    return np.stack([np.ones_like(u1), u1, u2, u1 * u1, u1 * u2, u2 * u2], axis=-1)


def geodesic_coordinates(prompts: Prompts) -> tuple[np.ndarray, np.ndarray]:
    """Log-map coordinates (P, q, n, 2) of every context point at each query's component, and
    the mask (P, q, n) of context points on the query's component; circles fill only u₁."""
    n = prompts.n
    z, zq = prompts.z[:, :n], prompts.z[:, n:]
    same = prompts.chart[:, n:, None] == prompts.chart[:, None, :n]
    qdim = np.take_along_axis(prompts.dims, prompts.chart[:, n:], axis=1)  # (P, q)
    # circle: signed angle in the component's plane
    cross = zq[:, :, None, 0] * z[:, None, :, 1] - zq[:, :, None, 1] * z[:, None, :, 0]
    dot2 = zq[:, :, None, 0] * z[:, None, :, 0] + zq[:, :, None, 1] * z[:, None, :, 1]
    circle = np.stack([np.arctan2(cross, dot2), np.zeros_like(cross)], axis=-1)
    # sphere: θ times the unit tangent direction, in a tangent frame at the query
    cos = np.clip(np.einsum("pqc,pnc->pqn", zq, z), -1.0, 1.0)
    tangent = z[:, None, :, :] - cos[..., None] * zq[:, :, None, :]
    norm = np.linalg.norm(tangent, axis=-1, keepdims=True)
    direction = np.divide(tangent, norm, out=np.zeros_like(tangent), where=norm > 1e-12)
    frames = _tangent_frames(zq)  # (P, q, 3, 2)
    sphere = np.arccos(cos)[..., None] * np.einsum("pqnc,pqck->pqnk", direction, frames)
    u = np.where((qdim == 1)[..., None, None], circle, sphere)
    return u, same


def _tangent_frames(zq: np.ndarray) -> np.ndarray:
    """Orthonormal bases (…, 3, 2) of the planes orthogonal to the unit vectors zq (…, 3)."""
    helper = np.eye(3)[np.argmin(np.abs(zq), axis=-1)]
    e1 = helper - np.sum(helper * zq, axis=-1, keepdims=True) * zq
    e1 /= np.linalg.norm(e1, axis=-1, keepdims=True)
    return np.stack([e1, np.cross(zq, e1)], axis=-1)


DEGREE_OF_FEATURE = np.array([0, 1, 1, 2, 2, 2])
USES_U2 = np.array([False, False, True, False, True, True])


def local_degree_mask(w: np.ndarray, qdim: np.ndarray, min_ratio: float) -> np.ndarray:
    """Active quadratic features (P, q, 6) per query: the highest degree ≤ 2 whose coefficient
    count times `min_ratio` is at most the kernel's effective sample size (Σw)²/Σw², and no u₂
    terms on circles."""
    n_eff = w.sum(-1) ** 2 / np.maximum((w**2).sum(-1), 1e-300)
    count = {1: np.array([1, 2, 3]), 2: np.array([1, 3, 6])}
    degree = np.zeros(qdim.shape, dtype=np.int64)
    for d, counts in count.items():
        for deg in (1, 2):
            degree = np.where((qdim == d) & (n_eff >= min_ratio * counts[deg]), deg, degree)
    active = DEGREE_OF_FEATURE <= degree[..., None]
    return active & ~(USES_U2 & (qdim == 1)[..., None])


def oracle_lp(
    prompts: Prompts, h0: float, alpha: float, h_max: float, min_points: int, min_ratio: float
) -> np.ndarray:
    """Oracle tangent local-polynomial (degree 2) prediction at each query."""
    n = prompts.n
    u, same = geodesic_coordinates(prompts)
    qdim = np.take_along_axis(prompts.dims, prompts.chart[:, n:], axis=1)
    dist = np.where(same, np.linalg.norm(u, axis=-1), np.inf)
    n_c = same.sum(-1)
    h = np.minimum(h0 * np.maximum(n_c, 1) ** (-1.0 / (2 * alpha + qdim)), h_max)
    k = np.clip(np.minimum(min_points, n_c), 1, None) - 1
    kth = np.take_along_axis(np.sort(dist, axis=-1), k[..., None], -1)[..., 0]
    h = np.maximum(h, np.where(np.isfinite(kth), kth * 1.0001, h))
    w = np.where(same, np.clip(1.0 - (dist / h[..., None]) ** 2, 0.0, None), 0.0)
    _, y, _ = split(prompts)
    fit = weighted_intercept(quadratic_features(u), w, y, local_degree_mask(w, qdim, min_ratio))
    return np.where(n_c > 0, fit, y.mean(-1, keepdims=True))
