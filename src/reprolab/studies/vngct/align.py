"""Alignment pre-training: teach a fresh tiny LLaVA to read its images before the stream.

LLaVA-style models reach continual tuning already aligned (projector pre-training on
captions). Here the whole tiny model — vision tower, projector and language model — trains on
the stream's alignment records (captions of a disjoint, smaller image pool: aligning on every
task type turns the stream into re-tuning) for a fixed number of steps with AdamW; afterwards
the tower is frozen by `MLLMAdapter`.

Choices: batches are drawn with replacement from a seeded generator (a step budget, not
epochs); one learning rate for all parameters, reached after a linear warm-up (without it some
seeds never left the loss plateau at chance); the loss is the answer loss of the stream. The
measurements behind the warm-up are in docs/studies/vngct.md.
"""

from __future__ import annotations

import numpy as np
import torch
from transformers import LlavaForConditionalGeneration

from reprolab.core.progress import progress
from reprolab.studies.vngct.tensors import Samples, answer_loss


def align(
    model: LlavaForConditionalGeneration,
    samples: Samples,
    pixels: torch.Tensor,
    steps: int,
    lr: float,
    warmup_steps: int,
    batch_size: int,
    seed: int,
    show_progress: bool = False,
) -> list[float]:
    """Train every parameter of `model` on `samples` (images from `pixels`); the loss per step.

    The learning rate rises linearly over `warmup_steps`, then stays at `lr`.
    """
    rng = np.random.default_rng(seed)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.0)
    warmup = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: min(1.0, (step + 1) / warmup_steps) if warmup_steps else 1.0
    )
    model.train()
    losses = []
    for _ in progress(range(steps), desc="alignment", enabled=show_progress):
        batch = samples.take(torch.as_tensor(rng.integers(0, len(samples), batch_size)))
        logits = model(
            input_ids=batch.input_ids,
            attention_mask=batch.attention_mask,
            pixel_values=pixels[batch.image],
        ).logits
        loss = answer_loss(logits, batch.labels).mean()
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        optimizer.step()
        warmup.step()
        losses.append(float(loss.detach()))
    model.eval()
    return losses
