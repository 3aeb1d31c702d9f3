"""Each agent's reliability over time: a posterior over a rate seen through a noisy detector.

The robust mechanism keeps two of these per agent: over its violation rate p (how often it
breaks the norm) and over its false-report rate f (how often a report it files names an agent
who did not violate). Neither is observed directly: an audit's detector fires with probability
TPR on a violation and FPR otherwise, so one audit of agent i has likelihood

    P(detected | p) = p·TPR + (1 − p)·FPR

and the audit of an agent that j reported has, for j's false-report rate,

    P(detected | f) = (1 − f)·TPR + f·FPR.

Neither likelihood is conjugate to a Beta prior, so the posterior is kept exactly on a grid of
rates (cell midpoints of [0, 1]): each observation adds its log-likelihood, and between rounds
the log-density is pulled toward the prior by a factor `decay` (exponential forgetting: old
evidence fades, so an agent can regain trust and a reformed one is not punished forever). The
Beta prior (its two shape values) and the decay are params.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import logsumexp


@dataclass(frozen=True)
class Detector:
    """The auditor's test: fires with probability `tpr` on a violation and `fpr` otherwise."""

    tpr: float
    fpr: float

    def audit(
        self, violated: np.ndarray, audited: np.ndarray, rng: np.random.Generator
    ) -> np.ndarray:
        """Which audited agents the detector flags ([N] bool); one uniform draw per agent, so
        the draws do not depend on who was audited."""
        draws = rng.random(violated.shape[0])
        rate = np.where(violated, self.tpr, self.fpr)
        return audited & (draws < rate)

    def violated_given(self, detected: bool, rate: np.ndarray) -> np.ndarray:
        """P(the audited agent violated this round | the detector's outcome), for agents whose
        violation probability this round is `rate` (Bayes' rule)."""
        hit = rate * (self.tpr if detected else 1 - self.tpr)
        miss = (1 - rate) * (self.fpr if detected else 1 - self.fpr)
        return hit / (hit + miss)


class RatePosterior:
    """Posteriors over one rate per agent on a grid of `points` cells (module docstring)."""

    def __init__(self, agents: int, points: int, prior: tuple[float, float], decay: float):
        self.grid = (np.arange(points) + 0.5) / points
        a, b = prior
        log_prior = (a - 1) * np.log(self.grid) + (b - 1) * np.log1p(-self.grid)
        self.log_prior = log_prior - logsumexp(log_prior)
        self.log_density = np.tile(self.log_prior, (agents, 1))
        self.decay = decay

    def observe(self, agent: int, fired: bool, when_one: float, when_zero: float) -> None:
        """Add one observation of `agent`: a detector that fires with probability `when_one`
        if the event the rate counts happened and `when_zero` if not, did (or did not) fire."""
        fire = self.grid * when_one + (1 - self.grid) * when_zero
        likelihood = fire if fired else 1 - fire
        density = self.log_density[agent] + np.log(likelihood)
        self.log_density[agent] = density - logsumexp(density)

    def forget(self) -> None:
        """Pull every posterior toward the prior: log-density ← decay·log-density +
        (1 − decay)·log-prior, normalised."""
        mixed = self.decay * self.log_density + (1 - self.decay) * self.log_prior
        self.log_density = mixed - logsumexp(mixed, axis=1, keepdims=True)

    def mean(self) -> np.ndarray:
        """Posterior mean rate of every agent [N]."""
        return np.exp(self.log_density) @ self.grid

    def sample(self, rng: np.random.Generator) -> np.ndarray:
        """One rate per agent drawn from its posterior (Thompson sampling), by inverse CDF on
        the grid with one uniform draw per agent."""
        cdf = np.cumsum(np.exp(self.log_density), axis=1)
        draws = rng.random(cdf.shape[0]) * cdf[:, -1]
        cells = (cdf < draws[:, None]).sum(axis=1)
        return self.grid[np.minimum(cells, self.grid.size - 1)]
