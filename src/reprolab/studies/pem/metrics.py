"""Separation quality (SINR) and the spectral bound on PEM's surrogate error.

SINR: sources and outputs are centred, matched by the Hungarian algorithm on |correlation|,
each output is rescaled by least squares onto its source (which also fixes the sign), and
SINR = 10 log10(Σ‖s_i‖² / Σ‖s_i − α_i y_π(i)‖²), capped at `SINR_CAP` dB (a perfect
reconstruction would be infinite). Outputs with a non-finite value (a diverged run) have no
SINR: NaN, which a tuning trial scores as failed.

Surrogate bound (derived for this reconstruction, stated in the study's docstring): with
x_i = λ_i(C_e)/ε_e the error second-moment eigenvalues in units of ε_e = 1/β, the surrogate
error is δ = J − H = ½ Σ_i [x_i − log(1 + x_i)] ≥ 0, and
    ¼ Σ_i x_i² / (1 + x_i)  ≤  δ  ≤  ¼ Σ_i x_i²  =  ‖C_e‖_F² β² / 4,
so the trace surrogate is accurate when the error spectrum is small against ε_e; the
upper bound is tight (ratio → 1) as x_max → 0 and loose by a factor ≈ x/2 for large x.
"""

from __future__ import annotations

import numpy as np
from scipy.optimize import linear_sum_assignment

SINR_CAP = 120.0


def sinr_db(sources: np.ndarray, outputs: np.ndarray) -> float:
    """SINR (dB) of `outputs` (N × n) against `sources` after permutation and scaling."""
    if sources.shape != outputs.shape:
        raise ValueError(f"sinr: sources {sources.shape} and outputs {outputs.shape} differ")
    if not np.all(np.isfinite(outputs)):
        return float("nan")
    s = sources - sources.mean(axis=0)
    y = outputs - outputs.mean(axis=0)
    s_norm = np.linalg.norm(s, axis=0)
    y_norm = np.linalg.norm(y, axis=0)
    corr = (s.T @ y) / np.outer(s_norm, np.where(y_norm > 0, y_norm, 1.0))
    rows, cols = linear_sum_assignment(-np.abs(corr))
    matched = y[:, cols[np.argsort(rows)]]
    power = np.sum(matched**2, axis=0)
    alpha = np.where(power > 0, np.sum(s * matched, axis=0) / np.where(power > 0, power, 1.0), 0)
    residual = float(np.sum((s - alpha * matched) ** 2))
    signal = float(np.sum(s**2))
    return float(min(SINR_CAP, 10.0 * np.log10(signal / max(residual, signal * 1e-12))))


def surrogate_bound(errors: np.ndarray, beta: float) -> dict[str, float]:
    """δ = J − H for the error samples (N × n), its spectral lower/upper bounds and x_max."""
    second = errors.T @ errors / len(errors)
    x = np.clip(np.linalg.eigvalsh(second), 0.0, None) * beta
    delta = 0.5 * float(np.sum(x - np.log1p(x)))
    upper = 0.25 * float(np.sum(x**2))
    lower = 0.25 * float(np.sum(x**2 / (1.0 + x)))
    return {
        "delta": delta,
        "lower": lower,
        "upper": upper,
        "x_max": float(x.max()),
        "tightness": upper / delta if delta > 0 else 1.0,
    }
