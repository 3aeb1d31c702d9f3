"""ntm's few-step baselines: rectified flow matching sampled by Euler steps, and consistency
distillation of that flow-matching teacher.

Both use the interpolation of the forward chain, x_t = (1 − t)·x₀ + t·ε (t = 1 is noise), and the
same trunk as the trajectory model's predictor (a linear embedding plus a sinusoidal time
embedding, then residual MLP blocks). Flow matching regresses the velocity ε − x₀; Euler
integration from t = 1 to 0 on a uniform grid costs one network evaluation per step.

Consistency distillation (Song et al. 2023) in the flow's own parameterisation:
f_θ(x, t) = x − t·F_θ(x, t), so f_θ(x, 0) = x holds by construction and F_θ starts as a copy of
the teacher's velocity net (f is then the teacher's one-step Euler jump to t = 0). Training pulls
f_θ at a grid point t_n towards an EMA copy f_θ⁻ at the teacher's Heun step to t_{n−1}; sampling
is multistep: jump to t = 0, re-noise to the next time of the sampling grid, jump again.
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

import torch
from torch import nn

from reprolab.models.draws import anchor, integers, normal, sinusoidal_embedding, uniform
from reprolab.studies.ntm.trajectory_model import ResidualBlock


class VelocityNet(nn.Module):
    """v_θ(x, t): (batch, dim) and (batch,) times → (batch, dim)."""

    def __init__(self, dim: int, width: int = 128, blocks: int = 3) -> None:
        super().__init__()
        self.embed = nn.Linear(dim, width)
        self.blocks = nn.Sequential(*[ResidualBlock(width) for _ in range(blocks)])
        self.out = nn.Linear(width, dim)

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """The velocity at (x, t)."""
        h = self.embed(x) + sinusoidal_embedding(t, self.embed.out_features)
        return self.out(self.blocks(h))


def interpolate(x0: torch.Tensor, noise: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
    """x_t = (1 − t)·x₀ + t·ε, t per sample (batch,)."""
    return (1.0 - t)[:, None] * x0 + t[:, None] * noise


def flow_matching_loss(
    net: VelocityNet, x0: torch.Tensor, generator: torch.Generator
) -> torch.Tensor:
    """Mean squared error of v_θ(x_t, t) against ε − x₀ at uniform times (per dimension)."""
    noise = normal(x0.shape, generator, x0)
    t = uniform((x0.shape[0],), generator, x0)
    return (net(interpolate(x0, noise, t), t) - (noise - x0)).square().mean()


@torch.no_grad()
def euler_sample(
    net: VelocityNet, n: int, dim: int, steps: int, generator: torch.Generator
) -> torch.Tensor:
    """n samples by `steps` Euler steps of dx/dt = v_θ from t = 1 (noise) to 0: NFE = steps."""
    x = normal((n, dim), generator, anchor(net))
    grid = torch.linspace(1.0, 0.0, steps + 1, device=x.device)
    for start, end in zip(grid[:-1], grid[1:], strict=True):
        x = x + (end - start) * net(x, start.expand(n))
    return x


class ConsistencyModel(nn.Module):
    """f_θ(x, t) = x − t·F_θ(x, t) with F_θ initialised from a velocity net."""

    def __init__(self, teacher: VelocityNet) -> None:
        super().__init__()
        self.net = copy.deepcopy(teacher)

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        """The estimate of x₀ from x_t."""
        return x - t[:, None] * self.net(x, t)


def heun_step(
    teacher: VelocityNet, x: torch.Tensor, t: torch.Tensor, t_next: torch.Tensor
) -> torch.Tensor:
    """The teacher's Heun step of its ODE from t to t_next (per-sample times)."""
    h = (t_next - t)[:, None]
    v = teacher(x, t)
    guess = x + h * v
    return x + 0.5 * h * (v + teacher(guess, t_next))


def consistency_loss(
    student: ConsistencyModel,
    target: ConsistencyModel,
    teacher: VelocityNet,
    x0: torch.Tensor,
    grid_points: int,
    generator: torch.Generator,
) -> torch.Tensor:
    """Squared distance between f_θ(x_{t_n}, t_n) and f_θ⁻ at the teacher's Heun step to
    t_{n−1}, n uniform over 1..grid_points on the grid t_n = n / grid_points."""
    n = integers(1, grid_points + 1, (x0.shape[0],), generator, x0)
    t, t_prev = n / grid_points, (n - 1) / grid_points
    x_t = interpolate(x0, normal(x0.shape, generator, x0), t)
    with torch.no_grad():
        anchor = target(heun_step(teacher, x_t, t, t_prev), t_prev)
    return (student(x_t, t) - anchor).square().mean()


@torch.no_grad()
def ema_update(target: nn.Module, online: nn.Module, decay: float) -> None:
    """target ← decay·target + (1 − decay)·online, parameter by parameter."""
    for kept, new in zip(target.parameters(), online.parameters(), strict=True):
        kept.lerp_(new, 1.0 - decay)


@torch.no_grad()
def consistency_sample(
    model: ConsistencyModel,
    n: int,
    dim: int,
    times: Sequence[float],
    generator: torch.Generator,
) -> torch.Tensor:
    """Multistep consistency sampling at `times` (descending from 1): jump to x₀ from noise, then
    at every later time re-noise the estimate to that time and jump again: NFE = len(times)."""
    x = normal((n, dim), generator, anchor(model))
    estimate = model(x, torch.full((n,), float(times[0]), device=x.device))
    for t in times[1:]:
        t_batch = torch.full((n,), float(t), device=x.device)
        x = interpolate(estimate, normal((n, dim), generator, x), t_batch)
        estimate = model(x, t_batch)
    return estimate
