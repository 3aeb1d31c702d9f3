"""The frozen image backbone: a `transformers` vision transformer, its blocks and its tokens.

Smoke and ci scale build a tiny ViT from a `ViTConfig` and pre-train it in the workflow
(`strap_pretrain`) on still images of the motion clips' sprites (SynthShapes: 5 shapes x 2
colours on a clean background, 10 classes), with a fixed number of steps from a fixed seed, and
save it with `save_pretrained`; the folder is a DVC-tracked checkpoint. Paper scale names a
folder saved beforehand (CLIP ViT-B/16's vision tower, `CLIPVisionModel`), loaded with
`local_files_only`: nothing is downloaded.

The study reaches into a model through three functions that know both families: `blocks`
(the transformer layers the hooks go on), `hidden_states` (the last block's tokens, CLS first)
and `token_count`.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from reprolab.core.io import atomic_dir, write_json
from reprolab.core.progress import progress

LOG = logging.getLogger(__name__)
PRETRAIN_RECORD = "pretrain.json"
SHAPE_COLOURS = 2
"""SynthShapes uses the first two colours of the motion clips' palette."""


def vit_config(spec: Mapping[str, Any]) -> Any:
    """The `ViTConfig` of params `backbone` (image and patch size, width, depth, heads)."""
    from transformers import ViTConfig

    width = int(spec["hidden_size"])
    return ViTConfig(
        image_size=int(spec["image_size"]),
        patch_size=int(spec["patch_size"]),
        hidden_size=width,
        num_hidden_layers=int(spec["layers"]),
        num_attention_heads=int(spec["heads"]),
        intermediate_size=int(spec["mlp_ratio"]) * width,
        num_channels=3,
    )


def build_vit(spec: Mapping[str, Any], seed: int) -> nn.Module:
    """A randomly initialised tiny ViT (no pooling layer), its weights drawn from `seed`."""
    from transformers import ViTModel

    torch.manual_seed(seed)
    return ViTModel(vit_config(spec), add_pooling_layer=False)


def load_backbone(folder: str | Path) -> nn.Module:
    """Load a saved ViT or CLIP vision model from `folder`, offline, in eval mode."""
    from transformers import AutoConfig, CLIPVisionModel, ViTModel

    config = AutoConfig.from_pretrained(folder, local_files_only=True)
    if config.model_type == "vit":
        model = ViTModel.from_pretrained(folder, add_pooling_layer=False, local_files_only=True)
    elif config.model_type in ("clip", "clip_vision_model"):
        model = CLIPVisionModel.from_pretrained(folder, local_files_only=True)
    else:
        raise ValueError(
            f"{folder}: model_type {config.model_type!r} is not a ViT or CLIP vision model"
        )
    return model.eval()


def blocks(model: nn.Module) -> nn.ModuleList:
    """The transformer blocks of a ViT (`layers`) or CLIP vision model (`encoder.layers`)."""
    if hasattr(model, "layers"):
        return model.layers
    if hasattr(model, "encoder") and hasattr(model.encoder, "layers"):
        return model.encoder.layers
    raise TypeError(f"{type(model).__name__}: no transformer blocks found")


def hidden_states(model: nn.Module, pixels: torch.Tensor) -> torch.Tensor:
    """The last block's tokens [images, N, d] (CLS first) of normalised `pixels`."""
    return model(pixel_values=pixels).last_hidden_state


def token_count(model: nn.Module) -> int:
    """Tokens per image: the patches plus CLS."""
    config = model.config
    return (int(config.image_size) // int(config.patch_size)) ** 2 + 1


def normalise(
    pixels: np.ndarray | torch.Tensor, mean: list[float], std: list[float]
) -> torch.Tensor:
    """uint8 [..., H, W, 3] to float [..., 3, H, W], scaled to [0, 1] and standardised."""
    images = torch.as_tensor(np.asarray(pixels)).to(torch.float32) / 255.0
    images = images.movedim(-1, -3)
    shape = (3, 1, 1)
    return (images - torch.tensor(mean).view(shape)) / torch.tensor(std).view(shape)


def shape_classes() -> int:
    """The number of SynthShapes classes: the motion clips' shapes × SHAPE_COLOURS."""
    from reprolab.preprocess.video.motion import SHAPES

    return len(SHAPES) * SHAPE_COLOURS


def shapes_dataset(
    count: int, seed: int, size: int, radius: tuple[float, float]
) -> tuple[np.ndarray, np.ndarray]:
    """SynthShapes: `count` still images (uint8 [count, size, size, 3]) of one sprite on a
    black background, class = shape x colour (the motion clips' 5 shapes, their first 2 colours),
    the sprite's size and place drawn at random; the labels."""
    from reprolab.preprocess.video.motion import COLOUR_NAMES, PALETTE, shape_mask

    rng = np.random.default_rng(seed)
    colours = [np.asarray(PALETTE[name]) for name in COLOUR_NAMES[:SHAPE_COLOURS]]
    labels = rng.integers(0, shape_classes(), size=count)
    images = np.zeros((count, size, size, 3), dtype=np.float64)
    for index, label in enumerate(labels):
        shape, colour = divmod(int(label), len(colours))
        half = rng.uniform(*radius)
        cx, cy = rng.uniform(half, size - half, size=2)
        images[index] = shape_mask(shape, cx, cy, half, size)[..., None] * colours[colour]
    return np.round(images * 255).astype(np.uint8), labels


def pretrain(
    spec: Mapping[str, Any], pretraining: Mapping[str, Any], out_dir: str | Path
) -> dict[str, Any]:
    """Pre-train the tiny ViT on SynthShapes and save it to `out_dir` (atomically).

    A linear head on the CLS token, AdamW, `pretraining.steps` steps of `batch_size` images
    drawn from a fixed set of `images` training images; the held-out accuracy on
    `test_images` goes to `pretrain.json` beside the weights. Everything comes from
    `pretraining.seed`.
    """
    seed = int(pretraining["seed"])
    size = int(spec["image_size"])
    radius = (float(pretraining["radius"][0]), float(pretraining["radius"][1]))
    images, labels = shapes_dataset(int(pretraining["images"]), seed, size, radius)
    test_images, test_labels = shapes_dataset(
        int(pretraining["test_images"]), seed + 1, size, radius
    )
    mean, std = list(spec["mean"]), list(spec["std"])
    inputs, targets = normalise(images, mean, std), torch.as_tensor(labels)
    model = build_vit(spec, seed)
    head = nn.Linear(int(spec["hidden_size"]), shape_classes())
    optimiser = torch.optim.AdamW(
        [*model.parameters(), *head.parameters()],
        lr=float(pretraining["lr"]),
        weight_decay=float(pretraining["weight_decay"]),
    )
    generator = torch.Generator().manual_seed(seed)
    batch = int(pretraining["batch_size"])
    model.train()
    for _ in progress(range(int(pretraining["steps"])), "pretrain steps"):
        index = torch.randint(len(inputs), (batch,), generator=generator)
        logits = head(hidden_states(model, inputs[index])[:, 0])
        loss = F.cross_entropy(logits, targets[index])
        optimiser.zero_grad()
        loss.backward()
        optimiser.step()
    model.eval()
    with torch.no_grad():
        test_inputs = normalise(test_images, mean, std)
        predicted = head(hidden_states(model, test_inputs)[:, 0]).argmax(1).numpy()
    accuracy = float(np.mean(predicted == test_labels))
    LOG.info("pretrained tiny ViT: held-out SynthShapes accuracy %.3f", accuracy)
    record = {"test_accuracy": accuracy, "final_loss": float(loss.item()), **pretraining}
    with atomic_dir(out_dir) as tmp:
        model.save_pretrained(tmp)
        write_json(Path(tmp) / PRETRAIN_RECORD, record)
    return record
