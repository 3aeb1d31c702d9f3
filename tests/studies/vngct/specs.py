"""Params shared by the vngct job tests (the shape of params.yaml's vngct section, tiny) and a
tuning record that selects nothing, for runs whose tuning is not under test."""

from __future__ import annotations

from typing import Any

from reprolab.core.tuning import tune
from reprolab.studies.vngct.spec import METHODS

PARAMS: dict[str, Any] = {
    "stream": "synthcit",
    "checkpoint": None,
    "prompt_template": "{prompt}",
    "runtime": {"device": "cpu", "dtype": "float32", "cache_features": True},
    "lora": {"rank": 0, "alpha": 16, "dropout": 0.0, "targets": ["q_proj", "v_proj"]},
    "methods": list(METHODS),
    "epochs": {"where": 1, "plus": 1},
    "model": {
        "image_size": 16,
        "patch_size": 4,
        "hidden": 16,
        "layers": 1,
        "heads": 2,
        "calibration_width": 8,
    },
    "align": {"seed": 0, "steps": 3, "lr": 0.001, "warmup_steps": 2, "batch_size": 4},
    "training": {
        "batch_size": 8,
        "lr_language": 0.0005,
        "lr_visual": 0.001,
        "lr_calibration": 0.001,
        "weight_decay": 0.0,
        "gate_floor": 0.05,
        "gate_noise_quantile": 0.05,
        "calibration_weight": 1.0,
        "ewc_strength": 10.0,
        "fisher_batches": 1,
        "eval_batch_size": 64,
    },
    "tune": {
        "train_fraction": 0.5,
        "validation_fraction": 0.25,
        "grid": {
            "seqft": {"lr_scale": [0.5, 1.0]},
            "freeze_visual": {"lr_scale": [0.5, 1.0]},
            "random_gate": {"lr_scale": [0.5, 1.0]},
            "ewc": {"ewc_strength": [1.0, 10.0]},
            "vngct_nocal": {"gate_floor": [0.05, 0.5]},
            "vngct": {"calibration_weight": [0.0, 1.0]},
        },
    },
}


def untuned(method: str) -> dict[str, Any]:
    """A real tuning record of `method` whose one grid point changes nothing."""
    return tune(method, {}, lambda values, seed: 0.0, [1000], "average_accuracy", "max")
