"""Training loops shared by the studies.

`train_steps`: the small language models the workflow trains (proofrank's chat models, the fact
LM): AdamW without weight decay (betas 0.9, 0.95), linear warm-up then cosine decay to a tenth of
the peak rate, gradients clipped at norm 1, the loss logged as the mean of each window of steps.

`fit`: a loss closure (a fresh batch per call) minimised by Adam (the fused kernel: one pass
over the many small tensors of a flow, a fixed summation order) with a cosine decay of the rate
to zero, no weight decay and no clipping; a non-finite loss stops the run (`Diverged`), which a
tuning job scores as a failed grid point (ntm's and bidrive's models)."""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Mapping, Sequence

import torch
from torch import nn

from reprolab.core.progress import progress

WARMUP_SHARE = 20
"""The warm-up lasts 1/WARMUP_SHARE of the steps (at least one)."""


def warmup_cosine(step: int, steps: int, lr: float, warmup: bool = True) -> float:
    """The learning rate at `step` (0-based) of `steps`: linear warm-up over the first 5 %
    (none when not `warmup`), then cosine decay from `lr` to `lr` / 10."""
    ramp = max(1, steps // WARMUP_SHARE) if warmup else 0
    if step < ramp:
        return lr * (step + 1) / ramp
    done = (step - ramp) / max(1, steps - ramp)
    return lr * (0.1 + 0.45 * (1 + math.cos(math.pi * done)))


def train_steps(
    model: torch.nn.Module,
    next_batch: Callable[[], Mapping[str, torch.Tensor]],
    steps: int,
    lr: float,
    log_every: int,
    label: str,
    show_progress: bool = True,
) -> list[float]:
    """Train `model` for `steps` steps on the batches `next_batch` returns (keyword arguments
    of the model, whose output has a `loss`); the mean loss of each window of `log_every`
    steps (the last window may be shorter)."""
    optimiser = torch.optim.AdamW(model.parameters(), lr=lr, betas=(0.9, 0.95), weight_decay=0.0)
    losses: list[float] = []
    window: list[float] = []
    model.train()
    for step in progress(range(steps), label, show_progress):
        for group in optimiser.param_groups:
            group["lr"] = warmup_cosine(step, steps, lr)
        loss = model(**next_batch()).loss
        optimiser.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimiser.step()
        window.append(float(loss.detach()))
        if len(window) == log_every or step == steps - 1:
            losses.append(sum(window) / len(window))
            window = []
    return losses


class Diverged(RuntimeError):
    """A training run whose loss stopped being finite."""


def fit(
    parameters: Sequence[nn.Parameter],
    loss_at: Callable[[], torch.Tensor],
    steps: int,
    lr: float,
    desc: str,
    log_every: int,
    after_step: Callable[[], None] | None = None,
) -> list[float]:
    """Minimise `loss_at()` (a fresh batch per call) for `steps` Adam steps at peak `lr` with
    cosine decay; `after_step` runs after every update (an EMA). Returns the windowed mean
    losses; a non-finite loss stops the run with `Diverged`, naming `desc` and the step."""
    optimizer = torch.optim.Adam(parameters, lr=lr, fused=True)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, steps)
    curve, window = [], []
    for step in progress(range(steps), desc=desc):
        loss = loss_at()
        if not torch.isfinite(loss):
            raise Diverged(f"{desc}: loss {loss.item()} at step {step} (lr {lr:g})")
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        schedule.step()
        if after_step is not None:
            after_step()
        window.append(loss.item())
        if len(window) == log_every or step == steps - 1:
            curve.append(sum(window) / len(window))
            window = []
    return curve


def score_unless_diverged(score: Callable[[], float], log: logging.Logger) -> float:
    """`score()`, or NaN (a failed grid point, never selected) when its training diverged; the
    divergence is logged."""
    try:
        return float(score())
    except Diverged as error:
        log.warning("%s", error)
        return math.nan
