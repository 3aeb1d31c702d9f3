"""The noise samplers have the stated tails (Hill estimator) and a zero centre."""

import numpy as np
import pytest

from reprolab.studies.bilevel_ht.noise import hill_tail_index, sample_noise


@pytest.mark.parametrize(("kind", "tail"), [("student_t", 1.5), ("pareto", 1.5), ("pareto", 2.5)])
def test_heavy_tailed_samplers_have_the_stated_tail_index(kind, tail):
    draws = sample_noise(np.random.default_rng(0), kind, tail, (1_000_000,))
    assert hill_tail_index(draws, k=1000) == pytest.approx(tail, abs=0.15)
    assert abs(np.median(draws)) < 0.01  # symmetric around zero


def test_gaussian_is_light_tailed_and_hill_recovers_an_exact_pareto():
    gauss = sample_noise(np.random.default_rng(1), "gaussian", 0.0, (1_000_000,))
    assert hill_tail_index(gauss, k=1000) > 5.0  # no power-law tail
    u = np.random.default_rng(2).random(200_000)
    assert hill_tail_index(u ** (-1 / 1.5), k=5000) == pytest.approx(1.5, abs=0.05)


def test_bad_noise_is_named():
    rng = np.random.default_rng(0)
    with pytest.raises(ValueError, match="unknown kind 'cauchy'"):
        sample_noise(rng, "cauchy", 1.0, (3,))
    with pytest.raises(ValueError, match="tail index must be positive"):
        sample_noise(rng, "pareto", 0.0, (3,))
