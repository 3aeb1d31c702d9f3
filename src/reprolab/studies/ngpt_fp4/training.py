"""Training one GPT or nGPT under one NVFP4 recipe, and what a run records about it.

Each architecture keeps its own recipe (models.py): GPT trains with AdamW (weight decay on the
matrices only), a linear warm-up over the first 5 % of the steps; nGPT with Adam, no weight
decay, no warm-up, and its matrices renormalised after every step. Both decay the rate by a
cosine to a tenth of its peak (`reprolab.models.training.warmup_cosine`, whose warm-up is the
card's 5 %) and clip the gradient norm at 1. Batches are random windows of the training stream
drawn from the run's own generator, so a seed gives the same batches under every recipe: losses
of two recipes on one seed are paired.

A run records the training loss per window of steps, the validation loss at the end (the
model's forward under its recipe, on fixed windows of the validation stream: what the run
itself would report), the largest absolute gradient entry each block linear layer saw, and the
loss spikes: steps whose loss exceeds the mean of the previous `SPIKE_WINDOW` steps by more than
`SPIKE_SIGMAS` of their standard deviation.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F

from reprolab.core.progress import progress
from reprolab.models.training import warmup_cosine
from reprolab.studies.ngpt_fp4.models import CharLM, normalize_weights
from reprolab.studies.ngpt_fp4.nvfp4 import NVFP4Linear

SPIKE_WINDOW = 50
SPIKE_SIGMAS = 6.0


@dataclass(frozen=True)
class Schedule:
    """How long and how fast a run trains: steps, batch of `batch` windows of the model's
    context, peak learning rate, GPT's weight decay, the loss logged per `log_every` steps."""

    steps: int
    batch: int
    lr: float
    weight_decay: float
    log_every: int


@dataclass(frozen=True)
class TrainRecord:
    """What a run records (module docstring)."""

    losses: list[float]
    val_loss: float
    spikes: list[int]
    max_gradients: dict[str, float]


def windows(
    stream: torch.Tensor, count: int, length: int, generator: torch.Generator
) -> tuple[torch.Tensor, torch.Tensor]:
    """`count` random windows of `length` + 1 tokens of a (N,) stream of token ids (any integer
    dtype), as int64 inputs (count, length) and next-token targets (count, length)."""
    starts = torch.randint(0, len(stream) - length - 1, (count,), generator=generator)
    rows = torch.stack([stream[start : start + length + 1] for start in starts.tolist()]).long()
    return rows[:, :-1], rows[:, 1:]


def on_device_of(
    model: CharLM, batch: tuple[torch.Tensor, torch.Tensor]
) -> tuple[torch.Tensor, ...]:
    """A batch of (inputs, targets) moved to the model's device (the streams stay on the CPU,
    where the batch generator draws the same windows on any machine)."""
    device = model.embedding.weight.device
    return tuple(part.to(device) for part in batch)


def optimiser_for(model: CharLM, schedule: Schedule) -> torch.optim.Optimizer:
    """AdamW with weight decay on the matrices (GPT) or Adam without it (nGPT)."""
    if model.config.normalized:
        return torch.optim.Adam(model.parameters(), lr=schedule.lr, betas=(0.9, 0.95))
    matrices = [p for p in model.parameters() if p.dim() >= 2]
    others = [p for p in model.parameters() if p.dim() < 2]
    groups = [
        {"params": matrices, "weight_decay": schedule.weight_decay},
        {"params": others, "weight_decay": 0.0},
    ]
    return torch.optim.AdamW(groups, lr=schedule.lr, betas=(0.9, 0.95))


def loss_of(model: CharLM, inputs: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """Mean next-character cross-entropy (nats)."""
    logits = model(inputs)
    return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), targets.reshape(-1))


@torch.no_grad()
def validation_loss(model: CharLM, stream: torch.Tensor, batches: int, batch: int) -> float:
    """Mean loss over `batches` fixed windows of the validation stream (generator seed 0, the
    same windows for every run)."""
    generator = torch.Generator().manual_seed(0)
    context = model.config.context
    losses = [
        loss_of(model, *on_device_of(model, windows(stream, batch, context, generator)))
        for _ in range(batches)
    ]
    return float(torch.stack(losses).mean())


def spikes(losses: list[float]) -> list[int]:
    """Steps whose loss exceeds the mean of the previous SPIKE_WINDOW steps by more than
    SPIKE_SIGMAS standard deviations of them."""
    found = []
    for step in range(SPIKE_WINDOW, len(losses)):
        previous = torch.tensor(losses[step - SPIKE_WINDOW : step], dtype=torch.float64)
        if losses[step] > float(previous.mean() + SPIKE_SIGMAS * previous.std()):
            found.append(step)
    return found


def train(
    model: CharLM,
    train_stream: torch.Tensor,
    val_stream: torch.Tensor,
    schedule: Schedule,
    seed: int,
    val_batches: int,
    label: str = "train",
) -> TrainRecord:
    """Train `model` (its recipe already set) on random windows of the training stream drawn
    from `seed`; return its record (module docstring)."""
    generator = torch.Generator().manual_seed(seed)
    optimiser = optimiser_for(model, schedule)
    layers = {name: m for name, m in model.named_modules() if isinstance(m, NVFP4Linear)}
    largest = dict.fromkeys(layers, 0.0)
    per_step: list[float] = []
    model.train()
    for step in progress(range(schedule.steps), label):
        for group in optimiser.param_groups:
            group["lr"] = warmup_cosine(
                step, schedule.steps, schedule.lr, warmup=not model.config.normalized
            )
        batch = windows(train_stream, schedule.batch, model.config.context, generator)
        loss = loss_of(model, *on_device_of(model, batch))
        optimiser.zero_grad()
        loss.backward()
        for name, layer in layers.items():
            largest[name] = max(largest[name], float(layer.weight.grad.abs().max()))
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimiser.step()
        if model.config.normalized:
            normalize_weights(model)
        per_step.append(float(loss.detach()))
    model.eval()
    logged = [
        sum(per_step[i : i + schedule.log_every]) / len(per_step[i : i + schedule.log_every])
        for i in range(0, len(per_step), schedule.log_every)
    ]
    return TrainRecord(
        losses=logged,
        val_loss=validation_loss(model, val_stream, val_batches, schedule.batch),
        spikes=spikes(per_step),
        max_gradients=largest,
    )
