"""Frozen tile encoders: a spec dict (the `wsi.features.encoder` params) in, a torch module out.

`build_encoder(spec)` returns an `Encoder`: a torch module that stays in eval mode with every
parameter frozen, with `.dim` (feature size), `.input_size` (side of the square input) and
`.transform` (one uint8 HWC tile → a normalised float CHW tensor at `input_size`, run in the
DataLoader workers). The kinds and the choices each makes:

- `random_conv` (smoke and ci scale): a fixed small CNN, no download. Weights are drawn from a
  `torch.Generator` seeded with `spec["seed"]` (He-normal, zero biases), so the same seed gives
  the same network on every machine. Tiles are resized (area averaging) to `input_size`
  (default 96: a 256-px tile is downscaled inside the encoder's transform to keep 2 CPU cores
  above 200 tiles/s) and scaled to [-2, 2] by `(x / 255 - 0.5) / 0.25` per channel. Layers:
  one 3x3 stride-2 conv + ReLU per entry of `widths` (default 32, 64, 128); the last feature
  map is pooled by its per-channel mean and standard deviation, so D = 2 * widths[-1] (256 by
  default) and the features carry colour (means) and texture (spatial spread).
- `hf_local` (paper scale): a `transformers` vision model loaded with
  `AutoModel.from_pretrained(spec["path"], local_files_only=True)` in float32 — never from
  the network. Input size: `spec["input_size"]`, else the config's `image_size` (ViT), else
  224. Normalisation: `image_mean` / `image_std` of the directory's `preprocessor_config.json`
  when it has one, else ImageNet's. Pooling: a model whose last hidden state is a token
  sequence (ViT and its kin) gives its CLS token (`last_hidden_state[:, 0]`, after the final
  layer norm; the pooler head is not used, since self-supervised checkpoints leave it
  untrained); a convolutional model (ResNet, ConvNeXt) gives its `pooler_output` (global
  average pooling), flattened. D is measured by one forward pass at build time.

Every encoder records `attrs()` (kind, dim, seed, name, input size and the full resolved spec
as canonical JSON), which the features files carry so a rerun can tell whether a finished file
was made by the same encoder.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import torch
from torch import nn

from reprolab.core.io import canonical

PARAMS_KEY = "wsi.features.encoder"
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
RANDOM_CONV_DEFAULTS: dict[str, Any] = {"input_size": 96, "widths": [32, 64, 128]}
HF_DEFAULT_INPUT_SIZE = 224


@dataclass(frozen=True)
class TileTransform:
    """Resize an (H, W, 3) uint8 tile to `size` x `size` and normalise it per channel."""

    size: int
    mean: tuple[float, float, float]
    std: tuple[float, float, float]

    def __call__(self, tile: np.ndarray) -> torch.Tensor:
        """The tile as a float32 (3, size, size) tensor: `(tile / 255 - mean) / std`."""
        if tile.ndim != 3 or tile.shape[2] != 3 or tile.dtype != np.uint8:
            raise ValueError(f"expected an (H, W, 3) uint8 tile, got {tile.shape} {tile.dtype}")
        if tile.shape[:2] != (self.size, self.size):
            shrink = min(tile.shape[:2]) >= self.size
            interpolation = cv2.INTER_AREA if shrink else cv2.INTER_LINEAR
            tile = cv2.resize(tile, (self.size, self.size), interpolation=interpolation)
        mean = np.asarray(self.mean, dtype=np.float32)
        std = np.asarray(self.std, dtype=np.float32)
        scaled = (tile.astype(np.float32) / 255.0 - mean) / std
        return torch.from_numpy(np.ascontiguousarray(scaled.transpose(2, 0, 1)))


class Encoder(nn.Module):
    """A frozen tile encoder: (B, 3, input_size, input_size) float → (B, dim) float."""

    def __init__(
        self, kind: str, name: str, seed: int, spec: dict[str, Any], transform: TileTransform
    ) -> None:
        super().__init__()
        self.kind = kind
        self.name = name
        self.seed = seed
        self.spec = spec
        self.transform = transform
        self.input_size = transform.size
        self.dim = 0

    def freeze(self) -> Encoder:
        """Put the encoder in eval mode, freeze its parameters and measure its output size."""
        self.requires_grad_(False)
        super().train(False)
        probe = torch.zeros(1, 3, self.input_size, self.input_size)
        with torch.inference_mode():
            self.dim = int(self(probe).shape[1])
        return self

    def train(self, mode: bool = True) -> Encoder:
        """Stay in eval mode whatever is asked: an encoder is never trained here."""
        return super().train(False)

    def attrs(self) -> dict[str, Any]:
        """The attributes a features file records about the encoder that made it."""
        return {
            "encoder_kind": self.kind,
            "encoder_name": self.name,
            "encoder_seed": self.seed,
            "encoder_dim": self.dim,
            "encoder_input_size": self.input_size,
            "encoder_spec": json.dumps(canonical(self.spec), sort_keys=True),
        }


class RandomConvEncoder(Encoder):
    """A seeded random CNN pooled by per-channel mean and standard deviation."""

    def __init__(self, spec: dict[str, Any]) -> None:
        transform = TileTransform(spec["input_size"], (0.5, 0.5, 0.5), (0.25, 0.25, 0.25))
        super().__init__("random_conv", spec["name"], spec["seed"], spec, transform)
        generator = torch.Generator().manual_seed(spec["seed"])
        layers: list[nn.Module] = []
        channels = 3
        for width in spec["widths"]:
            conv = nn.Conv2d(channels, width, kernel_size=3, stride=2, padding=1)
            with torch.no_grad():
                std = math.sqrt(2.0 / (channels * 9))
                conv.weight.copy_(torch.randn(conv.weight.shape, generator=generator) * std)
                conv.bias.zero_()
            layers += [conv, nn.ReLU()]
            channels = width
        self.body = nn.Sequential(*layers)

    def forward(self, pixels: torch.Tensor) -> torch.Tensor:
        """Per-channel mean and standard deviation of the last feature map, (B, 2 * width)."""
        maps = self.body(pixels).flatten(2)
        return torch.cat([maps.mean(dim=2), maps.std(dim=2, correction=0)], dim=1)


class HFLocalEncoder(Encoder):
    """A `transformers` vision model from a local directory, pooled to one vector per tile."""

    def __init__(self, spec: dict[str, Any]) -> None:
        from transformers import AutoModel

        path = Path(spec["path"])
        if not path.is_dir():
            raise FileNotFoundError(
                f"{PARAMS_KEY}.path: model directory '{path}' does not exist; expected a folder "
                "written by save_pretrained (config.json and weights)"
            )
        try:
            model = AutoModel.from_pretrained(path, local_files_only=True, dtype=torch.float32)
        except (OSError, ValueError) as exc:
            raise ValueError(
                f"{PARAMS_KEY}.path: cannot load a transformers model from '{path}': {exc}"
            ) from exc
        mean, std = _normalisation(path)
        image_size = getattr(model.config, "image_size", None)
        size = spec.get("input_size") or _side(image_size) or HF_DEFAULT_INPUT_SIZE
        transform = TileTransform(size, mean, std)
        super().__init__("hf_local", spec["name"], spec["seed"], spec, transform)
        self.model = model

    def forward(self, pixels: torch.Tensor) -> torch.Tensor:
        """CLS token of a token model, pooled output of a convolutional one, (B, D)."""
        output = self.model(pixel_values=pixels)
        hidden = output.last_hidden_state
        if hidden.ndim == 3:
            return hidden[:, 0]
        return output.pooler_output.flatten(1)


def _side(image_size: Any) -> int | None:
    """The side of a config's `image_size` (an int or a (height, width) pair), if any."""
    if image_size is None:
        return None
    if isinstance(image_size, list | tuple):
        return int(image_size[0])
    return int(image_size)


def _normalisation(path: Path) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """Mean and std from the directory's preprocessor_config.json, else ImageNet's."""
    config_path = path / "preprocessor_config.json"
    if not config_path.is_file():
        return IMAGENET_MEAN, IMAGENET_STD
    config = json.loads(config_path.read_text())
    mean = tuple(float(v) for v in config.get("image_mean", IMAGENET_MEAN))
    std = tuple(float(v) for v in config.get("image_std", IMAGENET_STD))
    return mean, std


_KINDS: dict[str, tuple[type[Encoder], set[str], set[str]]] = {
    # kind: (class, required keys, optional keys)
    "random_conv": (RandomConvEncoder, {"seed"}, {"name", "input_size", "widths"}),
    "hf_local": (HFLocalEncoder, {"path"}, {"name", "input_size", "seed"}),
}
ENCODER_KINDS = tuple(_KINDS)


def resolve_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """Check an encoder spec and fill in the documented defaults; errors name the bad key."""
    kind = spec.get("kind")
    if kind not in _KINDS:
        raise ValueError(f"{PARAMS_KEY}.kind: got {kind!r}, expected one of {list(_KINDS)}")
    _, required, optional = _KINDS[kind]
    allowed = required | optional | {"kind"}
    unknown = sorted(set(spec) - allowed)
    if unknown:
        raise ValueError(
            f"{PARAMS_KEY}.{unknown[0]}: unknown key for kind {kind}; allowed {sorted(allowed)}"
        )
    missing = sorted(required - set(spec))
    if missing:
        raise ValueError(f"{PARAMS_KEY}.{missing[0]}: required for kind {kind}")
    resolved = dict(spec)
    if kind == "random_conv":
        resolved = {**RANDOM_CONV_DEFAULTS, **resolved, "name": spec.get("name", "random_conv")}
        resolved["widths"] = [int(w) for w in resolved["widths"]]
        if not resolved["widths"] or min(resolved["widths"]) < 1:
            raise ValueError(f"{PARAMS_KEY}.widths: expected positive ints, got {spec['widths']}")
    else:
        resolved["path"] = str(spec["path"])
        resolved["name"] = spec.get("name", Path(spec["path"]).name)
        resolved["seed"] = spec.get("seed", -1)
    resolved["seed"] = int(resolved["seed"])
    size = resolved.get("input_size")
    if size is not None and (not isinstance(size, int) or size < 8):
        raise ValueError(f"{PARAMS_KEY}.input_size: expected an int >= 8, got {size!r}")
    return resolved


def build_encoder(spec: dict[str, Any]) -> Encoder:
    """The frozen encoder a spec names (see the module docstring for the kinds and their keys).

    Building leaves torch's global random state as it was (layers draw their default
    initialisation from it before the seeded weights replace it).
    """
    resolved = resolve_spec(spec)
    with torch.random.fork_rng(devices=[]):
        return _KINDS[resolved["kind"]][0](resolved).freeze()
