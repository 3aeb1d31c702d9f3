"""Tiny ViTs, random clips and a small strap params section for the strap unit tests.

Every model here is a few thousand weights (16 px images, 8 px patches, width 16, 2-3 blocks,
2 heads) built from a spec dict with backbone.build_vit, so the whole tier runs in seconds on
one CPU thread; nothing is downloaded (HF_HUB_OFFLINE is set for every test).
"""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from reprolab.studies.strap.backbone import build_vit

SPEC = {
    "checkpoint": None,
    "image_size": 16,
    "patch_size": 8,
    "hidden_size": 16,
    "layers": 3,
    "heads": 2,
    "mlp_ratio": 2,
    "mean": [0.5, 0.5, 0.5],
    "std": [0.25, 0.25, 0.25],
}
"""A tiny ViT: 4 patch tokens + CLS, width 16."""
WIDTH = SPEC["hidden_size"]
TOKENS = (SPEC["image_size"] // SPEC["patch_size"]) ** 2 + 1
BOTTLENECK = 4

CLAIMS = {
    "alpha": 0.05,
    "min_effect": 1.0,
    "uniform": ["temporal_all", "st_adapter", "aim"],
    "min_trend": 0.5,
    "parameter_baselines": ["st_adapter", "aim"],
    "min_parameter_reduction": 29.0,
    "max_cost_ratio": 0.99,
    "coarse_margin": 2.0,
    "oracle_tolerance": 1,
}
"""The claims block of params.yaml's strap section."""

GRID = {"lr": [0.003, 0.01]}
PARAMS = {
    "backbone": SPEC,
    "pretrain": {
        "seed": 0,
        "images": 40,
        "test_images": 10,
        "radius": [2.0, 4.0],
        "steps": 3,
        "batch_size": 8,
        "lr": 0.001,
        "weight_decay": 0.05,
    },
    "tasks": {"fine": {"dataset": "synthmotion"}, "coarse": {"dataset": "synthmotion_coarse"}},
    "rows": [
        "probe",
        "spatial_all",
        "temporal_all",
        "st_adapter",
        "aim",
        "strap",
        "strap_reversed",
    ],
    "coarse_rows": ["temporal_all", "st_adapter", "aim", "strap"],
    "adapters": {"bottleneck": BOTTLENECK, "conv_std": 0.5},
    "train": {
        "epochs": 1,
        "batch_size": 2,
        "eval_batch_size": 4,
        "weight_decay": 0.01,
        "pool": "tokens",
        "device": "cpu",
    },
    "sensitivity": {"clips": 3, "kappa": 0.5},
    "tune": {
        "validation_fraction": 0.25,
        "grid": {
            row: dict(GRID)
            for row in ("probe", "spatial_all", "temporal_all", "st_adapter", "aim", "strap")
        },
    },
    "claims": CLAIMS,
    "table_digits": 1,
}
"""A strap params section as params.yaml shapes it, sized for unit tests."""


def params(**changes) -> dict:
    """A deep copy of PARAMS with top-level keys replaced."""
    return {**copy.deepcopy(PARAMS), **copy.deepcopy(changes)}


def tiny_vit(layers: int = 3, seed: int = 0) -> torch.nn.Module:
    """A randomly initialised tiny ViT with `layers` blocks, in eval mode."""
    return build_vit({**SPEC, "layers": layers}, seed).eval()


def random_clips(batch: int, frames: int, seed: int) -> torch.Tensor:
    """Normalised-looking clips [batch, frames, 3, 16, 16] drawn from `seed`."""
    generator = torch.Generator().manual_seed(seed)
    size = SPEC["image_size"]
    return torch.randn(batch, frames, 3, size, size, generator=generator)


def random_uint8_clips(count: int, frames: int, seed: int) -> np.ndarray:
    """uint8 clips [count, frames, 16, 16, 3] as the video stage stores them."""
    size = SPEC["image_size"]
    rng = np.random.default_rng(seed)
    return rng.integers(0, 256, size=(count, frames, size, size, 3), dtype=np.uint8)


@pytest.fixture(autouse=True)
def offline(monkeypatch):
    """No test of this study may reach the Hugging Face Hub."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("TRANSFORMERS_OFFLINE", "1")


@pytest.fixture(scope="module")
def vit() -> torch.nn.Module:
    """A tiny 3-block ViT shared by a module's tests (they must not change its weights)."""
    return tiny_vit()
