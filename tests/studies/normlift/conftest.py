"""A small scene spec shared by the normlift tests (params `data`, shrunk)."""

from __future__ import annotations

import pytest


@pytest.fixture
def data_spec() -> dict:
    """params `data` of a 300-Gaussian room seen by 4 cameras of 16 × 16 pixels."""
    return {
        "classes": 6,
        "min_coverage": 0.5,
        "scene": {
            "gaussians": 300,
            "surface_shares": {"floor": 0.25, "objects": 0.55},
            "half_size": 6.0,
            "wall_height": 3.0,
            "objects": 3,
            "object_half_size": [0.3, 0.6],
            "placement_radius": 2.0,
            "scale_factor": [0.6, 1.2],
            "opacity": [0.5, 0.95],
        },
        "cameras": {
            "views": 4,
            "image_size": 16,
            "radius": [4.5, 5.5],
            "height": [1.5, 2.5],
            "target_jitter": 1.0,
            "fov_degrees": 60.0,
            "holdout_every": 4,
        },
        "features": {
            "dim": 8,
            "text_spread": 1.2,
            "gap": 0.5,
            "patch_grid": 4,
            "noise": [0.4, 1.2],
            "hallucinations": 1,
            "hallucination_radius": 3.0,
        },
    }
