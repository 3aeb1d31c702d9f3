"""The reliability posteriors and the noisy detector: exact grid Bayes, forgetting, Thompson
draws, and the detector's rates."""

from __future__ import annotations

import numpy as np
import pytest
from scipy import integrate, stats

from reprolab.studies.norm_enforcement.reliability import Detector, RatePosterior

TPR, FPR = 0.7, 0.05
OBSERVATIONS = [(True, TPR, FPR), (False, TPR, FPR), (True, TPR, FPR)]
"""fired, not fired, fired: three audits of one agent by the params' detector."""


def integrated_mean(prior: tuple[float, float], observations) -> float:
    """∫ p·prior(p)·Π lik(p) dp / ∫ prior(p)·Π lik(p) dp by adaptive quadrature."""

    def unnormalised(p: float) -> float:
        value = stats.beta.pdf(p, *prior)
        for fired, when_one, when_zero in observations:
            fire = p * when_one + (1 - p) * when_zero
            value *= fire if fired else 1 - fire
        return value

    evidence = integrate.quad(unnormalised, 0, 1, epsabs=1e-13)[0]
    first = integrate.quad(lambda p: p * unnormalised(p), 0, 1, epsabs=1e-13)[0]
    return first / evidence


# The grid is a midpoint rule with cell width h = 1/points, so its error is O(h²) times the
# posterior density's curvature: h² = 2.5e-7 at 2000 points, 4e-4 at the params' 50 points.
@pytest.mark.parametrize(("points", "tolerance"), [(2000, 1e-6), (50, 1e-3)])
@pytest.mark.parametrize("prior", [(1.0, 4.0), (2.0, 3.0)])
def test_noisy_observations_match_the_integrated_posterior_mean(points, tolerance, prior):
    posterior = RatePosterior(agents=2, points=points, prior=prior, decay=0.98)
    for fired, when_one, when_zero in OBSERVATIONS:
        posterior.observe(0, fired, when_one, when_zero)
    expected = integrated_mean(prior, OBSERVATIONS)
    assert posterior.mean()[0] == pytest.approx(expected, abs=tolerance)
    assert posterior.mean()[1] == pytest.approx(prior[0] / sum(prior), abs=tolerance)  # untouched
    assert np.exp(posterior.log_density).sum(axis=1) == pytest.approx([1.0, 1.0])


def test_observation_order_does_not_matter_and_swapped_rates_mirror_the_rate():
    forward = RatePosterior(1, 200, (2.0, 3.0), 0.98)
    backward = RatePosterior(1, 200, (2.0, 3.0), 0.98)
    mirrored = RatePosterior(1, 200, (3.0, 2.0), 0.98)  # the prior of 1 − p
    for fired, when_one, when_zero in OBSERVATIONS:
        forward.observe(0, fired, when_one, when_zero)
        # the false-report likelihood: the detector fires with FPR when the event happened
        mirrored.observe(0, fired, when_zero, when_one)
    for fired, when_one, when_zero in reversed(OBSERVATIONS):
        backward.observe(0, fired, when_one, when_zero)
    assert np.allclose(forward.log_density, backward.log_density)
    # P(fire | f) = (1 − f)·TPR + f·FPR is P(fire | p) at p = 1 − f: the posterior is reflected
    assert np.allclose(mirrored.log_density[0], forward.log_density[0][::-1])


def test_forget_with_decay_one_keeps_and_with_decay_zero_resets():
    for decay in (1.0, 0.0, 0.5):
        posterior = RatePosterior(3, 50, (1.0, 4.0), decay)
        for _ in range(5):
            posterior.observe(1, True, TPR, FPR)
        posterior.observe(2, False, TPR, FPR)
        before = posterior.log_density.copy()
        posterior.forget()
        if decay == 1.0:
            assert np.allclose(posterior.log_density, before)
        elif decay == 0.0:
            assert np.allclose(posterior.log_density, posterior.log_prior[None, :])
        else:  # geometric mean of the posterior and the prior, renormalised
            mixed = np.sqrt(np.exp(before) * np.exp(posterior.log_prior))
            assert np.allclose(np.exp(posterior.log_density), mixed / mixed.sum(1, keepdims=True))
        assert np.allclose(posterior.log_density[0], posterior.log_prior)  # the prior is fixed


def test_forgetting_pulls_the_mean_back_toward_the_prior():
    posterior = RatePosterior(1, 50, (1.0, 4.0), 0.9)
    for _ in range(20):
        posterior.observe(0, True, 1.0, 0.0)
    means = [posterior.mean()[0]]
    for _ in range(60):
        posterior.forget()
        means.append(posterior.mean()[0])
    assert np.all(np.diff(means) < 0)
    assert means[-1] == pytest.approx(0.2, abs=0.01)  # the Beta(1, 4) prior mean


def test_thompson_draws_follow_the_posterior():
    posterior = RatePosterior(2, 50, (1.0, 4.0), 0.98)
    for _ in range(40):
        posterior.observe(0, True, TPR, FPR)  # a frequent violator
        posterior.observe(1, False, TPR, FPR)  # a clean record
    rng = np.random.default_rng(0)
    draws = np.array([posterior.sample(rng) for _ in range(4000)])
    assert set(np.unique(draws)) <= set(posterior.grid)
    mean = posterior.mean()
    assert draws[:, 0].mean() > 0.8 and draws[:, 1].mean() < 0.1
    assert draws.mean(axis=0) == pytest.approx(mean, abs=0.01)
    # the empirical CDF at every cell within 5 binomial s.d. of the posterior's
    cdf = np.cumsum(np.exp(posterior.log_density), axis=1)
    empirical = (draws[:, :, None] <= posterior.grid[None, None, :]).mean(axis=0)
    sd = np.sqrt(cdf * (1 - cdf) / len(draws))
    assert np.all(np.abs(empirical - cdf) <= 5 * sd + 1e-12)


def test_violated_given_is_bayes_rule():
    detector = Detector(tpr=TPR, fpr=FPR)
    rate = np.array([0.0, 0.1, 0.2, 0.5, 0.9, 1.0])
    fired = rate * 0.7 / (rate * 0.7 + (1 - rate) * 0.05)
    silent = rate * 0.3 / (rate * 0.3 + (1 - rate) * 0.95)
    assert np.allclose(detector.violated_given(True, rate), fired)
    assert np.allclose(detector.violated_given(False, rate), silent)
    # a detection of an agent at the Beta(1, 4) prior mean: 0.14 / 0.18
    assert detector.violated_given(True, np.array([0.2]))[0] == pytest.approx(0.14 / 0.18)


def test_audit_flags_only_audited_agents_at_the_detector_rates():
    detector = Detector(tpr=TPR, fpr=FPR)
    n = 40_000
    rng = np.random.default_rng(7)
    violated = rng.random(n) < 0.5
    audited = rng.random(n) < 0.75
    flagged = detector.audit(violated, audited, np.random.default_rng(8))
    assert flagged.dtype == bool and flagged.shape == (n,)
    assert not flagged[~audited].any()
    for group, rate in ((violated & audited, TPR), (~violated & audited, FPR)):
        count = group.sum()
        tolerance = 4 * np.sqrt(rate * (1 - rate) / count)
        assert flagged[group].mean() == pytest.approx(rate, abs=tolerance)


def test_audit_draws_do_not_depend_on_who_is_audited():
    detector = Detector(tpr=TPR, fpr=FPR)
    violated = np.random.default_rng(1).random(50) < 0.5
    everyone = detector.audit(violated, np.ones(50, bool), np.random.default_rng(2))
    some = np.arange(50) % 3 == 0
    part = detector.audit(violated, some, np.random.default_rng(2))
    assert np.array_equal(part, everyone & some)


def test_perfect_detector_is_exact():
    detector = Detector(tpr=1.0, fpr=0.0)
    violated = np.array([True, False, True, False])
    audited = np.array([True, True, False, False])
    for seed in range(20):
        flagged = detector.audit(violated, audited, np.random.default_rng(seed))
        assert flagged.tolist() == [True, False, False, False]
