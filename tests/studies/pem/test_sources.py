"""Synthetic problems: copula-uniform correlated sources, Dirichlet sources, SNR of the noise."""

import numpy as np
import pytest

from reprolab.studies.pem.sources import correlated_uniform, dirichlet, make_problem, mix


def test_copula_sources_are_uniform_with_the_predicted_correlation():
    rng = np.random.default_rng(0)
    s = correlated_uniform(40000, 3, 0.7, rng)
    assert s.min() >= 0 and s.max() <= 1
    np.testing.assert_allclose(s.mean(axis=0), 0.5, atol=0.01)
    np.testing.assert_allclose(s.var(axis=0), 1 / 12, atol=0.002)
    predicted = 6 / np.pi * np.arcsin(0.7 / 2)
    corr = np.corrcoef(s.T)[np.triu_indices(3, 1)]
    np.testing.assert_allclose(corr, predicted, atol=0.01)


def test_bad_correlation_is_named():
    with pytest.raises(ValueError, match=r"\[0, 1\), got 1.0"):
        correlated_uniform(10, 2, 1.0, np.random.default_rng(0))


def test_mixture_noise_has_the_stated_snr():
    rng = np.random.default_rng(1)
    s = correlated_uniform(50000, 4, 0.0, rng)
    problem = mix(s, 8, 15.0, rng)
    clean = s @ problem.mixing.T
    noise = problem.observations - clean
    snr = 10 * np.log10(np.mean((clean - clean.mean(0)) ** 2) / np.mean(noise**2))
    assert snr == pytest.approx(15.0, abs=0.05)


def test_simplex_problem_and_unknown_domain():
    rng = np.random.default_rng(2)
    s = dirichlet(100, 4, 1.0, rng)
    np.testing.assert_allclose(s.sum(axis=1), 1.0)
    problem = make_problem({"domain": "simplex", "alpha": 1.0, "snr_db": 30}, 50, 3, 6, rng)
    assert problem.observations.shape == (50, 6) and problem.mixing.shape == (6, 3)
    with pytest.raises(ValueError, match="unknown domain 'ball'"):
        make_problem({"domain": "ball", "snr_db": 30}, 50, 3, 6, rng)
