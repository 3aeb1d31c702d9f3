"""Small dataset and model parameters shared by the ssg tests (shapes of params.yaml's ssg)."""

from __future__ import annotations

from typing import Any

SYNTHMIL: dict[str, Any] = {
    "generator": "synthmil",
    "n_train": 24,
    "n_test": 16,
    "dim": 8,
    "bag_size": [16, 24],
    "witness_rate": 0.1,
    "heterogeneity": 1.0,
    "n_prototypes": 2,
    "noise": 0.3,
    "centre_scale": 1.0,
    "n_bag_centres": 4,
    "n_global_centres": 8,
    "n_centres_per_bag": 4,
    "mimic_rate": 0.0,
    "mimic_distance": 2.0,
}
MODEL: dict[str, Any] = {
    "hidden": 16,
    "attention_dim": 8,
    "dropout": 0.0,
    "clam": {"k_fraction": 0.1, "instance_weight": 0.3},
    "transmil": {"layers": 1, "heads": 2, "ff": 16},
    "grounding": {
        "lambda": 1.0,
        "warmup_epochs": 1,
        "eps": 0.05,
        "rho": 0.5,
        "iterations": 10,
        "bank_capacity": 16,
        "support_fraction": 0.1,
        "min_supports": 4,
    },
}
