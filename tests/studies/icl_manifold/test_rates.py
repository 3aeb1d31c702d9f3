"""Rate slopes: theory exponents, the log-log fit and the bootstrap on planted power laws."""

from __future__ import annotations

import numpy as np
import pytest

from reprolab.studies.icl_manifold.rates import (
    bootstrap_slopes,
    fit_slope,
    slope_summary,
    theory_slope,
)


def test_theory_slope_uses_the_largest_dimension():
    assert theory_slope(3.0, [1]) == pytest.approx(-6 / 7)
    assert theory_slope(3.0, [1, 2]) == pytest.approx(-0.75)


def test_fit_recovers_an_exact_power_law():
    n = np.array([32, 64, 128, 256, 512])
    slope, intercept = fit_slope(n, 3.0 * n**-0.8)
    assert slope == pytest.approx(-0.8) and np.exp(intercept) == pytest.approx(3.0)
    with pytest.raises(ValueError, match="need ≥ 2"):
        fit_slope([32], [1.0])


def test_bootstrap_interval_covers_a_planted_slope():
    rng = np.random.default_rng(7)
    n = np.array([32, 64, 128, 256, 512])
    # per-prompt squared errors: exponential with mean 2 n^-0.75 (like squared Gaussian noise)
    errors = rng.exponential(1.0, (n.size, 400)) * (2.0 * n**-0.75)[:, None]
    summary = slope_summary(n, errors, 300, 0.95, np.random.default_rng(8))
    assert summary["ci_low"] < -0.75 < summary["ci_high"]
    assert summary["ci_high"] - summary["ci_low"] < 0.2
    boot = bootstrap_slopes(n, errors, 50, np.random.default_rng(9))
    assert boot.shape == (50,) and np.std(boot) > 0
    # errors that do not depend on the prompt give a degenerate interval at the exact slope
    flat = np.repeat((n**-0.5)[:, None], 10, axis=1)
    assert np.allclose(bootstrap_slopes(n, flat, 20, np.random.default_rng(0)), -0.5)
