"""Train one placement's adapters and head on a task's clips, and measure what the table shows.

Training: AdamW on the trainable parameters (adapters and head; the backbone is frozen), a
linear warm-up over the first tenth of the steps and a cosine decay to zero, shuffled mini-
batches drawn from the run's seed; a fixed number of epochs for every row, so every placement
gets the same budget. Clips stay uint8 until a batch is normalised.

Inference cost is counted, not timed: `inference_flops` counts the floating-point operations
of one clip's forward pass with torch's FLOP counter, which is exact and the same on every
machine (a wall-clock rate would make the table differ from run to run). The wall-clock
rate is measured by `benchmarks/strap_inference.py`, as a ratio in one process.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from reprolab.core.determinism import resolve_device
from reprolab.core.progress import progress
from reprolab.studies.strap.backbone import normalise
from reprolab.studies.strap.data import ClipSet
from reprolab.studies.strap.model import AdaptedVideoModel

WARMUP_FRACTION = 0.1


def build_model(
    backbone: nn.Module, plan: Sequence[str], classes: int, settings: Mapping[str, Any], seed: int
) -> AdaptedVideoModel:
    """The adapted model of `plan` on the settings' device, its adapters and head drawn from
    `seed` (on the CPU, so a GPU run starts from the same draw)."""
    torch.manual_seed(seed)
    model = AdaptedVideoModel(
        backbone,
        plan,
        bottleneck=int(settings["bottleneck"]),
        classes=classes,
        pool=str(settings["pool"]),
        conv_std=float(settings["conv_std"]),
    )
    return model.to(resolve_device(settings["device"]))


def batch_of(clips: ClipSet, rows: np.ndarray, settings: Mapping[str, Any]) -> torch.Tensor:
    """The clips at `rows`, normalised, on the settings' device."""
    pixels = normalise(clips.clips[rows], list(settings["mean"]), list(settings["std"]))
    return pixels.to(resolve_device(settings["device"]))


def fit(
    model: AdaptedVideoModel,
    train: ClipSet,
    settings: Mapping[str, Any],
    lr: float,
    seed: int,
    label: str = "train",
) -> float:
    """Train `model` on `train` for `settings.epochs` epochs at peak rate `lr`; the last loss."""
    batch = int(settings["batch_size"])
    epochs = int(settings["epochs"])
    steps = epochs * math.ceil(len(train) / batch)
    warmup = max(1, int(WARMUP_FRACTION * steps))
    weights = [w for w in model.parameters() if w.requires_grad]
    optimiser = torch.optim.AdamW(weights, lr=lr, weight_decay=float(settings["weight_decay"]))
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimiser,
        lambda k: (
            min(1.0, (k + 1) / warmup) * 0.5 * (1 + math.cos(math.pi * min(k, steps) / steps))
        ),
    )
    order = np.random.default_rng(seed)
    targets = torch.as_tensor(train.labels).to(resolve_device(settings["device"]))
    model.train()
    loss = torch.tensor(math.nan)
    for _ in progress(range(epochs), label):
        permutation = order.permutation(len(train))
        for start in range(0, len(train), batch):
            rows = permutation[start : start + batch]
            loss = F.cross_entropy(model(batch_of(train, rows, settings)), targets[rows])
            optimiser.zero_grad()
            loss.backward()
            optimiser.step()
            schedule.step()
    model.eval()
    return float(loss.item())


@torch.no_grad()
def accuracy(model: AdaptedVideoModel, clips: ClipSet, settings: Mapping[str, Any]) -> float:
    """Top-1 accuracy of `model` on `clips`, in batches of `eval_batch_size`."""
    model.eval()
    batch = int(settings["eval_batch_size"])
    correct = 0
    for start in range(0, len(clips), batch):
        rows = np.arange(start, min(start + batch, len(clips)))
        predicted = model(batch_of(clips, rows, settings)).argmax(1).cpu().numpy()
        correct += int(np.sum(predicted == clips.labels[rows]))
    return correct / len(clips)


@torch.no_grad()
def inference_flops(model: AdaptedVideoModel, clip: torch.Tensor) -> int:
    """Floating-point operations of one forward pass of `clip` [1, T, 3, H, W]."""
    from torch.utils.flop_counter import FlopCounterMode

    model.eval()
    with FlopCounterMode(display=False) as counter:
        model(clip)
    return int(counter.get_total_flops())
