"""Synthetic BSS problems: correlated sources on a domain, a random mixture and sensor noise.

``box`` sources are copula-uniform: a Gaussian vector with equicorrelation ρ (every pair has
correlation ρ) is mapped through the normal CDF, so every source is uniform on [0, 1] and the
sources are dependent and correlated (Pearson correlation (6/π)·asin(ρ/2), slightly below ρ).
``simplex`` sources are Dirichlet(α·1) draws (sources that sum to one, so they are negatively
correlated by construction). The mixing matrix has N(0, 1) entries (m × n, m > n); white
Gaussian noise is added at the stated SNR (dB) relative to the mean power of the noise-free
mixtures (after removing their mean, so the SNR measures the informative part).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr


@dataclass(frozen=True)
class Problem:
    """One BSS problem: sources S (N × n), mixing A (m × n) and observations X = S Aᵀ + noise."""

    sources: np.ndarray
    mixing: np.ndarray
    observations: np.ndarray


def correlated_uniform(
    n_samples: int, n_sources: int, rho: float, rng: np.random.Generator
) -> np.ndarray:
    """Copula-uniform sources on [0, 1]^n with Gaussian equicorrelation `rho` (0 ≤ rho < 1)."""
    if not 0.0 <= rho < 1.0:
        raise ValueError(f"pem: source correlation must lie in [0, 1), got {rho}")
    cov = np.full((n_sources, n_sources), rho) + (1.0 - rho) * np.eye(n_sources)
    gauss = rng.standard_normal((n_samples, n_sources)) @ np.linalg.cholesky(cov).T
    return ndtr(gauss)


def dirichlet(n_samples: int, n_sources: int, alpha: float, rng: np.random.Generator) -> np.ndarray:
    """Sources on the probability simplex: Dirichlet(alpha, ..., alpha) draws."""
    return rng.dirichlet(np.full(n_sources, alpha), size=n_samples)


def mix(sources: np.ndarray, n_mixtures: int, snr_db: float, rng: np.random.Generator) -> Problem:
    """Mix `sources` with an N(0, 1) matrix and add white noise at `snr_db`."""
    mixing = rng.standard_normal((n_mixtures, sources.shape[1]))
    clean = sources @ mixing.T
    power = float(np.mean((clean - clean.mean(axis=0)) ** 2))
    noise = rng.standard_normal(clean.shape) * np.sqrt(power * 10.0 ** (-snr_db / 10.0))
    return Problem(sources=sources, mixing=mixing, observations=clean + noise)


def make_problem(
    condition: dict, n_samples: int, n_sources: int, n_mixtures: int, rng: np.random.Generator
) -> Problem:
    """The problem of one sweep condition ({domain, rho | alpha, snr_db})."""
    if condition["domain"] == "box":
        sources = correlated_uniform(n_samples, n_sources, float(condition["rho"]), rng)
    elif condition["domain"] == "simplex":
        sources = dirichlet(n_samples, n_sources, float(condition["alpha"]), rng)
    else:
        raise ValueError(f"pem: unknown domain {condition['domain']!r}; known: box, simplex")
    return mix(sources, n_mixtures, float(condition["snr_db"]), rng)
