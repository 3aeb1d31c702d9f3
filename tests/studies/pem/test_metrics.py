"""SINR on constructed outputs and the spectral bound on the surrogate error."""

import numpy as np
import pytest

from reprolab.studies.pem.metrics import SINR_CAP, sinr_db, surrogate_bound


def test_sinr_is_capped_for_a_permuted_rescaled_copy():
    rng = np.random.default_rng(0)
    s = rng.uniform(size=(500, 3))
    y = s[:, [2, 0, 1]] * np.array([-2.0, 0.5, 3.0]) + 7.0
    assert sinr_db(s, y) == SINR_CAP


def test_sinr_of_a_known_residual():
    # y_i = s_i + r_i with r orthogonal to s: after LS scaling the residual power is known
    rng = np.random.default_rng(1)
    s = rng.standard_normal((20000, 2))
    r = rng.standard_normal((20000, 2)) * 0.1
    y = s + r
    s_c, y_c = s - s.mean(0), y - y.mean(0)
    alpha = (s_c * y_c).sum(0) / (y_c**2).sum(0)
    expected = 10 * np.log10((s_c**2).sum() / ((s_c - alpha * y_c) ** 2).sum())
    assert sinr_db(s, y) == pytest.approx(expected)
    assert 19.0 < expected < 21.0  # ≈ 20 dB for a 0.1-std residual


def test_sinr_rejects_shape_mismatch():
    with pytest.raises(ValueError, match="differ"):
        sinr_db(np.zeros((5, 2)), np.zeros((5, 3)))


def test_surrogate_error_and_its_bounds_on_a_constructed_spectrum():
    # errors with E[e eᵀ] = diag(λ): δ = ½ Σ (x - log(1 + x)) with x = β λ
    beta = 10.0
    lam = np.array([0.001, 0.01, 0.2])
    errors = np.vstack([np.diag(np.sqrt(lam * 2)), -np.diag(np.sqrt(lam * 2))]) / np.sqrt(2)
    errors = errors * np.sqrt(len(errors) / 2)
    np.testing.assert_allclose(errors.T @ errors / len(errors), np.diag(lam), atol=1e-15)
    x = beta * lam
    out = surrogate_bound(errors, beta)
    assert out["delta"] == pytest.approx(0.5 * np.sum(x - np.log1p(x)))
    assert out["upper"] == pytest.approx(0.25 * np.sum(x**2))
    assert out["lower"] <= out["delta"] <= out["upper"]
    assert out["x_max"] == pytest.approx(2.0)


def test_bound_is_tight_for_small_errors_and_loose_for_large_ones():
    small = surrogate_bound(np.full((4, 1), 1e-3), 1.0)
    large = surrogate_bound(np.full((4, 1), 30.0), 1.0)
    assert small["tightness"] == pytest.approx(1.0, abs=1e-5)
    assert large["tightness"] > 50.0


def test_sinr_of_diverged_outputs_is_nan():
    s = np.random.default_rng(2).uniform(size=(50, 2))
    y = s.copy()
    y[3, 1] = np.inf
    assert np.isnan(sinr_db(s, y))
