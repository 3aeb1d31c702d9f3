"""ntm's self-distillation: the Bayes-identity score and Tweedie's estimate against the
closed forms of Gaussian data, and the denoiser's start."""

from __future__ import annotations

import math

import torch

from reprolab.studies.ntm.forward_chain import ForwardChain, gaussian_log_prob
from reprolab.studies.ntm.self_distillation import Denoiser, model_score, tweedie_denoise

TIMES = [0.1, 0.4, 0.7, 1.0]
MEAN, STD = 1.5, 0.5  # data x₀ ~ N(MEAN, STD²) in every dimension


def marginal_variance(t: float) -> float:
    """Var x_t for x_t = (1 − t)x₀ + tε."""
    return (1 - t) ** 2 * STD**2 + t**2


class AnalyticModel:
    """A 'trajectory model' whose first reverse step is the true p(x_{t_0} | x_{t_1}) of
    Gaussian data (a Gaussian in closed form); the predictor passes the states through."""

    def __init__(self) -> None:
        self.chain = ForwardChain(TIMES)

    def predictor(self, states: torch.Tensor) -> torch.Tensor:
        return states

    def step_log_prob(self, k: int, before: torch.Tensor, context: torch.Tensor) -> torch.Tensor:
        assert k == 1
        a, s = self.chain.transition(1)
        t0 = TIMES[0]
        prior_mean, prior_var = (1 - t0) * MEAN, marginal_variance(t0)
        # x_{t_0} ~ N(prior_mean, prior_var), x_{t_1} | x_{t_0} ~ N(a x_{t_0}, s²)
        post_var = 1.0 / (1.0 / prior_var + a**2 / s**2)
        post_mean = post_var * (prior_mean / prior_var + a * context / s**2)
        return gaussian_log_prob_var(before, post_mean, post_var)


def gaussian_log_prob_var(x: torch.Tensor, mean: torch.Tensor, var: float) -> torch.Tensor:
    return gaussian_log_prob(x, mean, math.sqrt(var))


def test_the_bayes_identity_gives_the_true_score_of_the_noisy_data():
    x = torch.linspace(-2, 4, 12, dtype=torch.float64).reshape(6, 2)
    score = model_score(AnalyticModel(), x, draws=3, generator=torch.Generator().manual_seed(0))
    t0 = TIMES[0]
    expected = -(x - (1 - t0) * MEAN) / marginal_variance(t0)
    assert torch.allclose(score, expected, atol=1e-10)


def test_tweedie_gives_the_posterior_mean_of_the_clean_data():
    x = torch.linspace(-2, 4, 12, dtype=torch.float64).reshape(6, 2)
    estimate = tweedie_denoise(AnalyticModel(), x, 2, torch.Generator().manual_seed(1), chunk=4)
    t0 = TIMES[0]
    gain = (1 - t0) * STD**2 / marginal_variance(t0)
    assert torch.allclose(estimate, MEAN + gain * (x - (1 - t0) * MEAN), atol=1e-10)


def test_the_denoiser_starts_as_the_rescale():
    x = torch.randn(5, 3)
    assert torch.allclose(Denoiser(3, 0.05)(x), x / 0.95)
