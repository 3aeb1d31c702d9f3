"""Heavy-tailed oracle noise: Student-t, symmetric Pareto (Lomax) and a Gaussian control.

Every draw is i.i.d. per coordinate with unit scale; the oracle multiplies it by σ. Student-t_ν
and the symmetrised Lomax (Pareto II) with shape α have tail index ν resp. α: for ν, α ≤ 2
the variance is infinite, for ≤ 1 even the mean. The Lomax draw gets a random sign, so its mean
is zero for α > 1. `hill_tail_index` estimates the tail index of |noise| from the largest order
statistics, the check that a sampler has the tail it claims.
"""

from __future__ import annotations

import numpy as np

KINDS = ("gaussian", "student_t", "pareto")


def sample_noise(
    rng: np.random.Generator, kind: str, tail: float, shape: tuple[int, ...]
) -> np.ndarray:
    """Unit-scale noise of `kind` (tail index `tail`; ignored for gaussian) with `shape`."""
    if kind == "gaussian":
        return rng.standard_normal(shape)
    if tail <= 0:
        raise ValueError(f"noise: tail index must be positive, got {tail} for {kind}")
    if kind == "student_t":
        return rng.standard_t(tail, shape)
    if kind == "pareto":
        return rng.pareto(tail, shape) * rng.choice(np.array([-1.0, 1.0]), shape)
    raise ValueError(f"noise: unknown kind {kind!r}; known: {', '.join(KINDS)}")


def hill_tail_index(samples: np.ndarray, k: int) -> float:
    """Hill estimate of the tail index of |samples| from its k largest values."""
    x = np.sort(np.abs(np.ravel(samples)))[::-1]
    if not 0 < k < x.size:
        raise ValueError(f"hill: need 0 < k < {x.size}, got k={k}")
    return float(1.0 / np.mean(np.log(x[:k] / x[k])))
