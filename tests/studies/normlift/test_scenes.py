"""The room generator and the camera ring."""

from __future__ import annotations

import numpy as np
import pytest

from reprolab.studies.normlift.scenes import FLOOR, WALL, look_at, make_cameras, make_gaussians


def test_gaussians_lie_on_their_surfaces(data_spec):
    spec = data_spec["scene"]
    g = make_gaussians(spec, data_spec["classes"], np.random.default_rng(0))
    assert len(g.means) == spec["gaussians"] == len(g.labels) == len(g.scales)
    floor, wall = g.labels == FLOOR, g.labels == WALL
    assert np.all(g.means[floor, 2] == 0)
    half = spec["half_size"]
    assert np.all((g.means[wall, 0] == half) | (g.means[wall, 1] == half))
    objects = ~(floor | wall)
    assert set(np.unique(g.labels[objects])) <= set(range(2, data_spec["classes"]))
    assert objects.sum() == pytest.approx(spec["gaussians"] * 0.55, abs=spec["objects"])
    assert np.all(g.means[objects, 2] >= -1e-12)  # objects stand on the floor
    assert np.all(g.scales > 0)
    assert np.all((g.opacity >= 0.5) & (g.opacity <= 0.95))


def test_look_at_puts_the_target_on_the_optical_axis():
    eye, target = np.array([3.0, -4.0, 2.0]), np.array([0.5, 0.5, 0.5])
    Rt = look_at(eye, target)
    R = Rt[:, :3]
    assert np.allclose(R @ R.T, np.eye(3)) and np.linalg.det(R) == pytest.approx(1.0)
    cam = Rt @ np.append(target, 1.0)
    assert np.allclose(cam[:2], 0, atol=1e-12)
    assert cam[2] == pytest.approx(np.linalg.norm(target - eye))
    above = Rt @ np.append(target + [0, 0, 1.0], 1.0)
    assert above[1] < 0  # world up is image up (camera y points down)


def test_every_fourth_camera_is_held_out(data_spec):
    spec = {**data_spec["cameras"], "views": 8}
    cams = make_cameras(spec, np.random.default_rng(0))
    assert cams.held_out.tolist() == [False, False, False, True] * 2
    assert cams.K.shape == (8, 3, 3) and cams.Rt.shape == (8, 3, 4)
    eyes = np.stack([-R[:, :3].T @ R[:, 3] for R in cams.Rt])
    radius = np.hypot(eyes[:, 0], eyes[:, 1])
    assert np.all((radius >= 4.5) & (radius <= 5.5))
