"""Prompts of in-context regression on a mixture of manifolds (the study's data generator).

A prompt has J components, each a circle (d = 1, in a random 2-plane) or a round 2-sphere
(d = 2, in a random 3-subspace) of radius in `radius`, embedded in R^D with a random centre;
the centres are drawn N(0, spread² I) and redrawn until every pair is at least
`separation` × the larger radius apart. Component j has kind `kinds[j % len(kinds)]`, so a
mixture of two kinds always holds both. Mixture weights are Dirichlet(`dirichlet`); every
point (context and queries alike) picks its component from them.

Targets: on a component, f = offset + amplitude · g(z) with z the point's coordinates on the
unit circle / sphere, offset ~ N(0, 1) and g a random spherical harmonic series of degrees
`degrees` (from degree 2 on, as the design card's prototype found, so that f is not nearly
linear in the ambient coordinates). The degree-ℓ basis functions are Re(c (a·z)^ℓ) with
a = u + i v for a random orthonormal pair (u, v): (a·z)^ℓ is a harmonic homogeneous
polynomial, so its restriction is a spherical harmonic of degree ℓ (on the circle it is
e^{iℓθ}). Each is divided by its RMS over the manifold and weighted ℓ^{-(α+½)} as the card's
Sobolev-type decay; the series is scaled to unit mean square. Observations are
y = f(x) + noise · N(0, 1); errors are measured against the noiseless f at the query.

The component count is either fixed (`components`) or grows with the prompt length (card:
J_n = ⌈log₂ n⌉ − 3, here never below `components`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

KIND_DIM = {"circle": 1, "sphere": 2}
HARMONICS_PER_DEGREE = 3


@dataclass(frozen=True)
class Prompts:
    """A batch of P prompts with n context points and q queries each.

    x: (P, n + q, D) points, context first; y: (P, n + q) noisy targets; f: (P, n + q) noiseless
    targets; chart: (P, n + q) component index; z: (P, n + q, 3) unit-manifold coordinates
    (circles use the first two); dims: (P, J) intrinsic dimension per component; radius: (P, J).
    """

    x: np.ndarray
    y: np.ndarray
    f: np.ndarray
    chart: np.ndarray
    z: np.ndarray
    dims: np.ndarray
    radius: np.ndarray
    n: int


def component_count(spec: dict[str, Any], n: int) -> int:
    """J for a prompt of n context points: fixed, or max(components, ⌈log₂ n⌉ − 3)."""
    if spec["grow_components"]:
        return max(int(spec["components"]), math.ceil(math.log2(n)) - 3)
    return int(spec["components"])


def _orthonormal(rng: np.random.Generator, dim: int, k: int) -> np.ndarray:
    """A random dim × k matrix with orthonormal columns."""
    q, r = np.linalg.qr(rng.standard_normal((dim, k)))
    return q * np.sign(np.diag(r))


def _centres(rng: np.random.Generator, radius: np.ndarray, spec: dict[str, Any]) -> np.ndarray:
    """Component centres with pairwise distance ≥ separation × the larger radius."""
    j = radius.size
    for _ in range(1000):
        c = spec["spread"] * rng.standard_normal((j, spec["ambient_dim"]))
        dist = np.linalg.norm(c[:, None] - c[None], axis=-1)
        need = spec["separation"] * np.maximum(radius[:, None], radius[None])
        if np.all((dist >= need) | np.eye(j, dtype=bool)):
            return c
    raise ValueError(
        f"icl_manifold: could not separate {j} centres with spread {spec['spread']}; "
        "increase 'spread' or lower 'separation'"
    )


def _unit_points(rng: np.random.Generator, dim: int, m: int) -> np.ndarray:
    """m uniform points on the unit circle (dim 1) or 2-sphere (dim 2), as (m, 3)."""
    if dim == 1:
        theta = rng.uniform(0.0, 2 * np.pi, m)
        return np.stack([np.cos(theta), np.sin(theta), np.zeros(m)], axis=1)
    g = rng.standard_normal((m, 3))
    return g / np.linalg.norm(g, axis=1, keepdims=True)


def harmonic_rms(dim: int, degree: int) -> float:
    """RMS over the unit circle/sphere of Re(c (a·z)^ℓ) for |c| = 1 and a = u + iv."""
    if dim == 1:
        return math.sqrt(0.5)
    # |a·z|² = 1 − (w·z)² with w = u × v; w·z is uniform on [−1, 1] on the sphere.
    mean = math.prod(2 * k / (2 * k + 1) for k in range(1, degree + 1))
    return math.sqrt(0.5 * mean)


@dataclass(frozen=True)
class Target:
    """A random harmonic series on one component: coefficients per basis function."""

    frames: np.ndarray  # (K, 3, 2) orthonormal (u, v) per basis function
    degrees: np.ndarray  # (K,)
    coef: np.ndarray  # (K,) complex
    offset: float

    def __call__(self, z: np.ndarray) -> np.ndarray:
        """f at unit-manifold coordinates z (m, 3)."""
        a = self.frames[:, :, 0] + 1j * self.frames[:, :, 1]  # (K, 3)
        az = z @ a.T  # (m, K)
        return self.offset + np.real(self.coef * az**self.degrees).sum(axis=1)


def random_target(rng: np.random.Generator, dim: int, spec: dict[str, Any], alpha: float) -> Target:
    """A target on a unit circle (dim 1; plane = first two coordinates) or sphere (dim 2)."""
    lo, hi = spec["degrees"][f"d{dim}"]
    per = 1 if dim == 1 else HARMONICS_PER_DEGREE
    degrees = np.repeat(np.arange(lo, hi + 1), per)
    k = degrees.size
    if dim == 1:
        frames = np.broadcast_to(np.eye(3)[:, :2], (k, 3, 2)).copy()
    else:  # Gram–Schmidt on two Gaussian vectors per basis function
        g = rng.standard_normal((k, 3, 2))
        u = g[:, :, 0] / np.linalg.norm(g[:, :, 0], axis=1, keepdims=True)
        v = g[:, :, 1] - np.sum(g[:, :, 1] * u, axis=1, keepdims=True) * u
        frames = np.stack([u, v / np.linalg.norm(v, axis=1, keepdims=True)], axis=2)
    c = (rng.standard_normal(k) + 1j * rng.standard_normal(k)) / math.sqrt(2 * per)
    rms = np.array([harmonic_rms(dim, int(d)) for d in degrees])
    norm = math.sqrt(float(np.sum(np.arange(lo, hi + 1) ** -(2 * alpha + 1.0))))
    coef = spec["amplitude"] * degrees ** -(alpha + 0.5) / rms / norm * c
    return Target(frames, degrees, coef, float(rng.standard_normal()))


def make_prompts(
    spec: dict[str, Any], n: int, queries: int, count: int, rng: np.random.Generator
) -> Prompts:
    """`count` prompts of n context points and `queries` query points drawn from `spec`."""
    if n < 1 or queries < 1 or count < 1:
        raise ValueError(f"icl_manifold: need n, queries, count ≥ 1, got {n}, {queries}, {count}")
    kinds = list(spec["kinds"])
    unknown = [k for k in kinds if k not in KIND_DIM]
    if unknown:
        raise ValueError(f"icl_manifold: unknown manifold kinds {unknown}; known {list(KIND_DIM)}")
    j = component_count(spec, n)
    m = n + queries
    big_d = spec["ambient_dim"]
    x = np.empty((count, m, big_d))
    y, f = np.empty((count, m)), np.empty((count, m))
    chart = np.empty((count, m), dtype=np.int64)
    z = np.zeros((count, m, 3))
    dims = np.array([KIND_DIM[kinds[i % len(kinds)]] for i in range(j)])
    radius = np.empty((count, j))
    for p in range(count):
        r = rng.uniform(*spec["radius"], size=j)
        centres = _centres(rng, r, spec)
        weights = rng.dirichlet(np.full(j, spec["dirichlet"]))
        chart[p] = rng.choice(j, size=m, p=weights)
        radius[p] = r
        for c in range(j):
            idx = np.flatnonzero(chart[p] == c)
            basis = _orthonormal(rng, big_d, dims[c] + 1)
            target = random_target(rng, int(dims[c]), spec, spec["alpha"])
            if idx.size == 0:
                continue
            zc = _unit_points(rng, int(dims[c]), idx.size)
            z[p, idx] = zc
            x[p, idx] = centres[c] + r[c] * zc[:, : dims[c] + 1] @ basis.T
            f[p, idx] = target(zc)
        y[p] = f[p] + spec["noise"] * rng.standard_normal(m)
    return Prompts(x, y, f, chart, z, np.tile(dims, (count, 1)), radius, n)
