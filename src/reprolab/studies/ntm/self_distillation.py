"""Self-distillation of a trajectory model's last step: its own score at t₀, Tweedie's estimate
of the clean sample from it, and a light denoiser trained on the model's own samples to output
that estimate in one pass.

The score comes from Bayes' rule with the known forward kernel: for any later state x_{t_1},
p(x_{t_0}) = p(x_{t_0} | x_{t_1}) p(x_{t_1}) / q(x_{t_1} | x_{t_0}), so
∇ log p(x_{t_0}) = ∇ log p_θ(x_{t_0} | x_{t_1:t_K}) − ∇ log q(x_{t_1} | x_{t_0}), exact when the
model is consistent with the forward chain. Choices: the later states are a forward-chain
trajectory from x_{t_0} (the predictor's context may see all of them), and the score is averaged
over `draws` such trajectories; only T_1's input is differentiated, the later states are fixed.
Tweedie for x_{t_0} = (1 − t₀)·x₀ + t₀·ε:
E[x₀ | x_{t_0}] = (x_{t_0} + t₀²·∇ log p(x_{t_0}))/(1 − t₀).
The denoiser is x/(1 − t₀) plus a zero-initialised MLP, so it starts at the rescaled sample (the
NTM-K row) and learns only the correction; it sees no data.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from reprolab.models.draws import normal
from reprolab.models.flows.nets import MLP
from reprolab.studies.ntm.trajectory_model import TrajectoryModel


def model_score(
    model: TrajectoryModel, x: torch.Tensor, draws: int, generator: torch.Generator
) -> torch.Tensor:
    """∇ log p_θ(x_{t_0}) at x (batch, dim) by the Bayes identity, averaged over `draws`
    forward trajectories from x."""
    chain = model.chain
    a, s = chain.transition(1)
    total = torch.zeros_like(x)
    for _ in range(draws):
        later = _forward_from(chain, x, generator)
        point = x.detach().requires_grad_(True)
        contexts = model.predictor(torch.stack(later, 1))
        log_p = model.step_log_prob(1, point, contexts[:, 0]).sum()
        (grad,) = torch.autograd.grad(log_p, point)
        # ∇_x log q(x_{t_1} | x) for q = N(a·x, s²I).
        forward_score = a * (later[0] - a * x) / s**2
        total += grad - forward_score
    return total / draws


def _forward_from(chain, x: torch.Tensor, generator: torch.Generator) -> list[torch.Tensor]:
    """[x_{t_1}, …, x_{t_K}] drawn from the forward chain started at x_{t_0} = x."""
    states, current = [], x.detach()
    for k in range(1, chain.steps + 1):
        a, s = chain.transition(k)
        current = a * current + s * normal(x.shape, generator, x)
        states.append(current)
    return states


def tweedie_estimate(x: torch.Tensor, score: torch.Tensor, t0: float) -> torch.Tensor:
    """E[x₀ | x_{t_0} = x] = (x + t₀²·score)/(1 − t₀)."""
    return (x + t0**2 * score) / (1.0 - t0)


def tweedie_denoise(
    model: TrajectoryModel,
    x: torch.Tensor,
    draws: int,
    generator: torch.Generator,
    chunk: int = 4096,
) -> torch.Tensor:
    """Tweedie's estimate of x₀ for every row of x from the model's own score, in chunks."""
    t0 = model.chain.times[0]
    parts = [
        tweedie_estimate(part, model_score(model, part, draws, generator), t0).detach()
        for part in x.split(chunk)
    ]
    return torch.cat(parts)


class Denoiser(nn.Module):
    """D_ψ(x) = x/(1 − t₀) + MLP(x): one light pass from a sample at t₀ to a clean sample."""

    def __init__(self, dim: int, t0: float, hidden: Sequence[int] = (64, 64)) -> None:
        super().__init__()
        self.scale = 1.0 / (1.0 - t0)
        self.correction = MLP(dim, dim, hidden)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """The denoised sample."""
        return self.scale * x + self.correction(x)
