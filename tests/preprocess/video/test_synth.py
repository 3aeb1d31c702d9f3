"""Synthetic sprite scenes: physics, states, renderers and the written dataset."""

from __future__ import annotations

import hashlib
import json

import numpy as np
import pytest

from reprolab.core.io import read_json
from reprolab.preprocess.video.decode import decode_all
from reprolab.preprocess.video.synth import (
    COLOURS,
    CONTACT_GAP,
    GRID,
    SHAPES,
    SceneSpec,
    _paint,
    _shape_mask,
    annotation,
    cell_of,
    render_frame,
    render_state,
    render_video,
    scene_from_annotation,
    simulate,
    state_at,
    step,
    write_scenes,
)

SPEC = SceneSpec(radius=4.5)
ENCODING = {"fps": 8, "crf": 0, "gop": 16, "pix_fmt": "yuv444p", "bframes": 0}


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_scenes_have_an_early_collision_and_separated_starts():
    for seed in range(30):
        scene = simulate(seed, SPEC)
        first = scene.collisions[0]["frame"]
        assert SPEC.collision_window[0] <= first <= SPEC.collision_window[1]
        start = scene.positions[0]
        gaps = np.linalg.norm(start[:, None] - start[None], axis=-1) + np.eye(len(start)) * 99
        assert gaps.min() > 2 * SPEC.radius + CONTACT_GAP
        assert len(set(scene.shapes)) == len(scene.shapes)
        assert len(set(scene.colours[0].tolist())) == len(scene.shapes)


def test_collision_swaps_velocities_and_colours():
    spec = SceneSpec(radius=2.0)
    pos = np.array([[10.0, 10.0], [15.5, 10.0]])
    vel = np.array([[1.0, 0.0], [-1.0, 0.5]])
    col = np.array([0, 3])
    _, new_vel, new_col, events = step(pos, vel, col, spec)
    assert ("collision", (0, 1)) in events
    np.testing.assert_allclose(new_vel, vel[[1, 0]])
    assert new_col.tolist() == [3, 0]


def test_wall_bounce_reflects_position_and_velocity():
    spec = SceneSpec(radius=2.0)
    pos, vel, _, events = step(
        np.array([[2.5, 16.0]]), np.array([[-1.0, 0.0]]), np.array([0]), spec
    )
    assert events == [("bounce", (0,))]
    assert pos[0, 0] == pytest.approx(2.5) and vel[0, 0] == 1.0
    free, _, _, none = step(
        np.array([[2.5, 16.0]]), np.array([[-1.0, 0.0]]), np.array([0]), spec, walls=False
    )
    assert none == [] and free[0, 0] == pytest.approx(1.5)


def test_cells_cover_the_grid_row_major():
    assert cell_of(np.array([0.0, 0.0]), 32) == 0
    assert cell_of(np.array([31.9, 0.0]), 32) == GRID - 1
    assert cell_of(np.array([16.0, 16.0]), 32) == 4
    assert cell_of(np.array([31.9, 31.9]), 32) == GRID * GRID - 1


def test_annotation_round_trips_the_scene_exactly():
    scene = simulate(5, SPEC)
    data = json.loads(json.dumps(annotation(scene, SPEC)))
    back = scene_from_annotation(data)
    np.testing.assert_array_equal(back.positions, scene.positions)
    np.testing.assert_array_equal(back.colours, scene.colours)
    assert [state_at(back, t, 32) for t in range(SPEC.frames)] == [
        state_at(scene, t, 32) for t in range(SPEC.frames)
    ]
    assert data["cells"][3] == [cell_of(p, 32) for p in scene.positions[3]]


def test_occluder_hides_what_passes_behind_it():
    for seed in range(50):
        scene = simulate(seed, SPEC)
        if scene.occluder is not None:
            break
    x0, x1 = scene.occluder
    frame = render_frame(scene, 0, SPEC)
    assert (frame[:, x0:x1] == 128).all()


def test_state_renders_differ_from_each_other_and_from_the_canonical_drawing():
    state = state_at(simulate(1, SPEC), 4, 32)
    a, b = render_state(state, 1, SPEC), render_state(state, 2, SPEC)
    canonical = render_state(state, 1, SPEC, jitter=0, scale_jitter=0)
    assert np.abs(a.astype(int) - b.astype(int)).mean() > 2
    assert np.abs(a.astype(int) - canonical.astype(int)).mean() > 0
    np.testing.assert_array_equal(render_state(state, 1, SPEC), a)


@pytest.mark.parametrize("shape", range(len(SHAPES)))
def test_painting_near_the_sprite_equals_blending_the_whole_frame(shape):
    """`_paint` computes the mask only within REACH radii of the centre; blending the whole
    frame with the whole-frame mask must give the same bytes, at the frame's edges too."""
    rng = np.random.default_rng(shape)
    for _ in range(200):
        size = int(rng.choice([32, 48]))
        image = rng.uniform(0, 255, size=(size, size, 3))
        cx, cy = rng.uniform(-6, size + 6, size=2)
        radius = float(rng.uniform(1, 9))
        colour = int(rng.integers(len(COLOURS)))
        whole = range(size)
        alpha = _shape_mask(shape, cx, cy, radius, whole, whole)[..., None]
        expected = image * (1 - alpha) + alpha * np.asarray(list(COLOURS.values())[colour], float)
        painted = image.copy()
        _paint(painted, shape, colour, cx, cy, radius)
        assert painted.tobytes() == expected.tobytes()


def test_written_dataset_is_deterministic_and_lossless(tmp_path):
    manifests = [
        write_scenes(tmp_path / name, 3, 7, SPEC, ENCODING, show_progress=False)
        for name in ("a", "b")
    ]
    assert manifests[0].equals(manifests[1])
    for sub in ("videos/scene_00000.mp4", "annotations/scene_00002.json", "manifest.csv"):
        assert _sha(tmp_path / "a" / sub) == _sha(tmp_path / "b" / sub)
    scene = scene_from_annotation(read_json(tmp_path / "a/annotations/scene_00001.json"))
    decoded = decode_all(tmp_path / "a/videos/scene_00001.mp4").frames
    rendered = render_video(scene, SPEC)
    assert decoded.shape == rendered.shape
    assert np.abs(decoded.astype(int) - rendered.astype(int)).max() <= 2
