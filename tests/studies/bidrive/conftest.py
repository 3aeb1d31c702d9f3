"""Shared by bidrive's tests: small network sizes, a tiny synthetic scene set, and hand-made
plans, roads and cars for the scorer and the costs."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from reprolab.studies.bidrive.scenes import generate_scenes

T = np.arange(1, 9) * 0.5  # waypoint times
STRAIGHT_2_LANES = [3.5, 0.0, 2.0, -1.75]  # half-width, curvature, lanes, ego in the right lane

SMALL = {"hidden": (32, 32), "encoder_hidden": (32,)}
"""Network sizes small enough for fast tests."""


@pytest.fixture(scope="module")
def data() -> tuple[torch.Tensor, torch.Tensor]:
    """Contexts [64, 36] and expert plans [64, 8, 2] of a tiny synthetic set (float32)."""
    scenes = generate_scenes(64, seed=0)
    return torch.tensor(scenes.ctx, dtype=torch.float32), torch.tensor(
        scenes.expert, dtype=torch.float32
    )


def straight_plan(speed: float, accel: float = 0.0, y: float = 0.0) -> np.ndarray:
    """Waypoints [8, 2] of motion along +x from `speed` at constant `accel`, offset y."""
    return np.stack([speed * T + 0.5 * accel * T**2, np.full_like(T, y)], axis=-1)


def car(x: float, y: float, vx: float = 0.0, length: float = 4.5, width: float = 2.0):
    """One agent row and its 10 Hz future at constant velocity along x."""
    agent = np.array([x, y, vx, 0.0, length, width, 1.0])
    t = np.arange(1, 41) * 0.1
    future = np.stack([x + vx * t, np.full_like(t, y)], axis=-1)
    return agent, future
