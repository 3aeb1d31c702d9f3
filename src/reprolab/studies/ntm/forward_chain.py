"""ntm's forward process: a Markov chain of Gaussian transitions whose marginals are those of
rectified-flow interpolation, x_t = (1 − t)·x₀ + t·ε.

On a grid t₀ < t₁ < … < t_K = 1 the marginal of x_{t_k} given x₀ is N((1 − t_k)·x₀, t_k²·I). The
chain that keeps these marginals moves by x_{t_k} = a_k·x_{t_{k−1}} + s_k·ε_k with
a_k = (1 − t_k)/(1 − t_{k−1}) and s_k² = t_k² − a_k²·t_{k−1}² (≥ 0 because t grows), so a_K = 0
and x_{t_K} = s_K·ε_K is standard normal whatever the data. t₀ > 0 adds a little noise to the
data first (TarFlow's noise augmentation), so every state of the trajectory has a density. The
reverse model learns p(x_{t_{k−1}} | x_{t_k}); the transitions' Gaussian log-densities here give
the exact −ELBO terms of q.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from reprolab.models.draws import normal


class ForwardChain:
    """The forward chain on the time grid `times` (t₀ < … < t_K = 1, t₀ ≥ 0)."""

    def __init__(self, times: Sequence[float]) -> None:
        grid = [float(t) for t in times]
        if len(grid) < 2 or grid[-1] != 1.0 or grid[0] < 0.0:
            raise ValueError(f"times must run from t0 >= 0 up to exactly 1, got {grid}")
        if any(later <= earlier for earlier, later in zip(grid, grid[1:], strict=False)):
            raise ValueError(f"times must increase strictly, got {grid}")
        self.times = grid

    @property
    def steps(self) -> int:
        """K, the number of transitions (reverse steps)."""
        return len(self.times) - 1

    def transition(self, k: int) -> tuple[float, float]:
        """(a_k, s_k) of x_{t_k} = a_k·x_{t_{k−1}} + s_k·ε, for k in 1..K."""
        if not 1 <= k <= self.steps:
            raise ValueError(f"transition k must be in 1..{self.steps}, got {k}")
        before, after = self.times[k - 1], self.times[k]
        a = (1.0 - after) / (1.0 - before)
        return a, math.sqrt(max(after**2 - a**2 * before**2, 0.0))

    def trajectory(self, x0: torch.Tensor, generator: torch.Generator) -> list[torch.Tensor]:
        """[x_{t_0}, …, x_{t_K}] from data x₀ (batch, features), noise from `generator`."""
        t0 = self.times[0]
        x = (1.0 - t0) * x0 + t0 * normal(x0.shape, generator, x0)
        states = [x]
        for k in range(1, self.steps + 1):
            a, s = self.transition(k)
            x = a * x + s * normal(x.shape, generator, x)
            states.append(x)
        return states

    def transition_log_prob(
        self, k: int, before: torch.Tensor, after: torch.Tensor
    ) -> torch.Tensor:
        """log q(x_{t_k} = after | x_{t_{k−1}} = before) per sample (sum over features)."""
        a, s = self.transition(k)
        return gaussian_log_prob(after, a * before, s)

    def start_log_prob(self, x0: torch.Tensor, start: torch.Tensor) -> torch.Tensor:
        """log q(x_{t_0} = start | x₀) per sample: the noise augmentation's density (t₀ > 0)."""
        t0 = self.times[0]
        if t0 == 0.0:
            raise ValueError("with t0 = 0 the first state is the data itself: no density")
        return gaussian_log_prob(start, (1.0 - t0) * x0, t0)


def gaussian_log_prob(x: torch.Tensor, mean: torch.Tensor, std: float) -> torch.Tensor:
    """log N(x; mean, std²·I) per sample (rows), summed over features."""
    z = (x - mean) / std
    return (-0.5 * z.square() - math.log(std) - 0.5 * math.log(2 * math.pi)).sum(-1)
