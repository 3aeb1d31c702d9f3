"""trpr's frozen backbone: a small `transformers` ViT built from params and pre-trained in the
workflow, as the paper's ViT-B/16 comes pre-trained on ImageNet.

Pre-training classifies the DigitStyles `pretrain` images by digit (every style, images no class
of the stream uses), so the backbone knows strokes but was never asked to tell styles apart:
the stream's classes, (digit, style) pairs, need what the adapters learn on top.

Choices: 16×16 one-channel images in 4×4 patches (16 tokens and a class token), no dropout (the
backbone is frozen afterwards, and dropout would only add noise to pre-training this short), a
linear head on the final class token, AdamW with weight decay 0.05, batches drawn by a seeded
generator. The head is dropped after pre-training.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from transformers import ViTConfig, ViTModel

from reprolab.core.progress import progress
from reprolab.studies.trpr.data import SIZE

PATCH = 4


def vit_config(spec: Mapping[str, Any]) -> ViTConfig:
    """The backbone's configuration from params `backbone` (`hidden`, `layers`, `heads`)."""
    hidden = int(spec["hidden"])
    return ViTConfig(
        image_size=SIZE,
        patch_size=PATCH,
        num_channels=1,
        hidden_size=hidden,
        num_hidden_layers=int(spec["layers"]),
        num_attention_heads=int(spec["heads"]),
        intermediate_size=2 * hidden,
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
    )


RGB_MEAN, RGB_STD = 0.5, 0.5
"""The pixel standardisation of the ImageNet-21k ViT-B/16 (`google/vit-base-patch16-224-in21k`
and the augreg weights): every channel, on the [0, 1] scale."""


def pixels(images: np.ndarray) -> torch.Tensor:
    """Model inputs of a stream's images: [N, 1, 16, 16] from DigitStyles' [N, 16, 16] floats
    in [0, 1]; [N, 3, S, S] standardised by `RGB_MEAN`, `RGB_STD` from a benchmark's
    [N, S, S, 3] uint8."""
    if images.ndim == 3:
        return torch.from_numpy(np.ascontiguousarray(images, dtype=np.float32))[:, None]
    scaled = torch.from_numpy(np.ascontiguousarray(images)).permute(0, 3, 1, 2).float() / 255.0
    return (scaled - RGB_MEAN) / RGB_STD


def load_backbone(folder: str) -> ViTModel:
    """A backbone saved with `save_pretrained` (the `trpr_pretrain` job's, or the paper's
    ViT-B/16), read from disk only, in eval mode."""
    return ViTModel.from_pretrained(folder, local_files_only=True, add_pooling_layer=False).eval()


def pretrain(
    images: np.ndarray, digits: np.ndarray, spec: Mapping[str, Any], seed: int
) -> tuple[ViTModel, list[dict[str, float]]]:
    """A ViT of params `backbone` pre-trained for `epochs` epochs to classify `images` by
    `digits` (module docstring), in eval mode, and its curve: per epoch, the mean loss and the
    training accuracy."""
    torch.manual_seed(seed)
    model = ViTModel(vit_config(spec), add_pooling_layer=False)
    head = torch.nn.Linear(model.config.hidden_size, int(digits.max()) + 1)
    trained = [*model.parameters(), *head.parameters()]
    optimizer = torch.optim.AdamW(trained, lr=float(spec["lr"]), weight_decay=0.05)
    inputs, labels = pixels(images), torch.from_numpy(digits)
    order = torch.Generator().manual_seed(seed)
    curve = []
    for epoch in progress(range(1, int(spec["epochs"]) + 1), "pretrain"):
        losses, hits = [], 0
        for batch in torch.randperm(len(labels), generator=order).split(int(spec["batch_size"])):
            logits = head(model(pixel_values=inputs[batch]).last_hidden_state[:, 0])
            loss = F.cross_entropy(logits, labels[batch])
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(float(loss.detach()) * len(batch))
            hits += int((logits.argmax(-1) == labels[batch]).sum())
        curve.append(
            {"epoch": epoch, "loss": sum(losses) / len(labels), "accuracy": hits / len(labels)}
        )
    return model.eval(), curve
