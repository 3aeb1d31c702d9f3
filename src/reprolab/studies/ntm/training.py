"""Training of every ntm model on fresh batches: the flow-matching teacher, the trajectory
models (NTM and Gauss) by exact trajectory likelihood, the consistency student, and the
self-distilled denoiser.

Choices: the shared loop `reprolab.models.training.fit` (fused Adam, cosine decay of the
learning rate to zero, no weight decay, no clipping, `Diverged` on a non-finite loss); every
step draws a fresh batch from the data source, whose own generator the caller seeds (so every
method of a seed sees the same batches), and the model's noise (times, forward chains) comes
from the run's generator. The loss is logged as the mean over windows of `log_every` steps (the
study's loss curves).
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

import torch

from reprolab.models.draws import integers
from reprolab.models.training import fit
from reprolab.studies.ntm.flow_matching import (
    ConsistencyModel,
    VelocityNet,
    consistency_loss,
    ema_update,
    flow_matching_loss,
)
from reprolab.studies.ntm.forward_chain import ForwardChain
from reprolab.studies.ntm.self_distillation import Denoiser
from reprolab.studies.ntm.trajectory_model import TrajectoryModel

Draw = Callable[[int], torch.Tensor]
"""A data source: batch size → a fresh batch (batch, dim) of float32 training samples."""


def train_flow_matching(
    draw: Draw,
    dim: int,
    net: dict[str, Any],
    budget: dict[str, Any],
    lr: float,
    generator: torch.Generator,
    device: torch.device | str = "cpu",
) -> tuple[VelocityNet, list[float]]:
    """The rectified-flow velocity net (`net`: width, blocks) trained on `device` for
    budget.steps."""
    model = VelocityNet(dim, int(net["width"]), int(net["blocks"])).to(device)
    curve = fit(
        list(model.parameters()),
        lambda: flow_matching_loss(model, draw(int(budget["batch"])), generator),
        int(budget["steps"]),
        lr,
        "flow matching",
        int(budget["log_every"]),
    )
    return model, curve


def trajectory_loss(
    model: TrajectoryModel, x0: torch.Tensor, generator: torch.Generator
) -> torch.Tensor:
    """−Σ_k log p_θ(x_{t_{k−1}} | x_{t_k:t_K}) / (K·D) averaged over forward-chain trajectories
    of x0: the exact trajectory NLL in nats per dimension (the prior term has no parameters)."""
    states = model.chain.trajectory(x0, generator)
    per_sample = model.step_log_probs(states).sum(-1)
    return -per_sample.mean() / (model.chain.steps * model.dim)


def build_trajectory_model(
    dim: int, times: Sequence[float], transporter_kind: str, net: dict[str, Any]
) -> TrajectoryModel:
    """A trajectory model on the grid `times` with the sizes of `net` (width, blocks,
    context_dim, attention, couplings, coupling_hidden)."""
    return TrajectoryModel(
        dim,
        ForwardChain(times),
        transporter_kind,
        couplings=int(net["couplings"]),
        coupling_hidden=tuple(int(h) for h in net["coupling_hidden"]),
        context_dim=int(net["context_dim"]),
        width=int(net["width"]),
        blocks=int(net["blocks"]),
        attention=bool(net["attention"]),
    )


def train_trajectory_model(
    draw: Draw,
    model: TrajectoryModel,
    budget: dict[str, Any],
    lr: float,
    generator: torch.Generator,
    desc: str,
) -> list[float]:
    """Maximum trajectory likelihood for budget.steps; returns the loss curve."""
    return fit(
        list(model.parameters()),
        lambda: trajectory_loss(model, draw(int(budget["batch"])), generator),
        int(budget["steps"]),
        lr,
        desc,
        int(budget["log_every"]),
    )


def train_consistency(
    draw: Draw,
    teacher: VelocityNet,
    budget: dict[str, Any],
    lr: float,
    ema: float,
    grid_points: int,
    generator: torch.Generator,
) -> tuple[ConsistencyModel, list[float]]:
    """Consistency distillation of `teacher` (frozen) with an EMA target of decay `ema`."""
    teacher = copy.deepcopy(teacher).requires_grad_(False)
    student = ConsistencyModel(teacher).requires_grad_(True)
    target = copy.deepcopy(student).requires_grad_(False)
    curve = fit(
        list(student.parameters()),
        lambda: consistency_loss(
            student,
            target,
            teacher,
            draw(int(budget["batch"])),
            grid_points,
            generator,
        ),
        int(budget["steps"]),
        lr,
        "consistency distillation",
        int(budget["log_every"]),
        after_step=lambda: ema_update(target, student, ema),
    )
    return student, curve


def train_denoiser(
    samples: torch.Tensor,
    targets: torch.Tensor,
    t0: float,
    hidden: Sequence[int],
    budget: dict[str, Any],
    lr: float,
    generator: torch.Generator,
) -> tuple[Denoiser, list[float]]:
    """The denoiser regressed on (model sample at t₀, Tweedie target) pairs, minibatches drawn
    from the given pool, on the pool's device."""
    denoiser = Denoiser(samples.shape[1], t0, hidden).to(samples.device)
    batch = int(budget["batch"])

    def loss() -> torch.Tensor:
        rows = integers(0, samples.shape[0], (batch,), generator, samples)
        return (denoiser(samples[rows]) - targets[rows]).square().mean()

    curve = fit(
        list(denoiser.parameters()),
        loss,
        int(budget["steps"]),
        lr,
        "self-distillation",
        int(budget["log_every"]),
    )
    return denoiser, curve
