"""Error-rate slopes: the theoretical exponent, least-squares log–log fits and bootstrap intervals.

The minimax rate of a Hölder-α target on a d-dimensional manifold is n^{-2α/(2α+d)}; on a
mixture the largest d dominates (the aggregate rate), so the theory slope of a setting is
−2α/(2α + max d). `fit_slope` is the ordinary least-squares slope of log MSE on log n.
`bootstrap_slopes` resamples the prompts at each n independently (they are independent draws)
and refits, so its percentile interval is the sampling uncertainty of the fitted slope.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def theory_slope(alpha: float, dims: Sequence[int]) -> float:
    """−2α/(2α + d_max): the log–log slope of the aggregate minimax rate."""
    d = max(int(v) for v in dims)
    return -2.0 * alpha / (2.0 * alpha + d)


def fit_slope(sizes: Sequence[float], mse: Sequence[float]) -> tuple[float, float]:
    """(slope, intercept) of the least-squares line log mse = intercept + slope · log size."""
    x, y = np.log(np.asarray(sizes, dtype=float)), np.log(np.asarray(mse, dtype=float))
    if x.size < 2 or x.shape != y.shape:
        raise ValueError(f"fit_slope: need ≥ 2 matching points, got {x.size} sizes, {y.size} mse")
    slope, intercept = np.polyfit(x, y, 1)
    return float(slope), float(intercept)


def bootstrap_slopes(
    sizes: Sequence[float], errors: np.ndarray, resamples: int, rng: np.random.Generator
) -> np.ndarray:
    """Slopes refitted on `resamples` bootstrap draws of the per-prompt errors (len(sizes), P)."""
    errors = np.asarray(errors, dtype=float)
    k, p = errors.shape
    idx = rng.integers(0, p, size=(resamples, k, p))
    means = errors[np.arange(k)[None, :, None], idx].mean(-1)
    x = np.log(np.asarray(sizes, dtype=float))
    xc = x - x.mean()
    logs = np.log(means)
    return (logs - logs.mean(-1, keepdims=True)) @ xc / (xc @ xc)


def slope_summary(
    sizes: Sequence[float],
    errors: np.ndarray,
    resamples: int,
    level: float,
    rng: np.random.Generator,
) -> dict[str, float]:
    """Fitted slope of the mean errors and its percentile bootstrap interval at `level`."""
    slope, intercept = fit_slope(sizes, np.asarray(errors).mean(-1))
    boot = bootstrap_slopes(sizes, errors, resamples, rng)
    tail = 100.0 * (1.0 - level) / 2.0
    lo, hi = np.percentile(boot, [tail, 100.0 - tail])
    return {"slope": slope, "intercept": intercept, "ci_low": float(lo), "ci_high": float(hi)}
