"""SynthMotion clips: classes, geometry, time reversal, the written dataset and its params."""

from __future__ import annotations

import copy
import dataclasses
import hashlib

import numpy as np
import pandas as pd
import pytest

from reprolab.core.determinism import derive_seed
from reprolab.core.io import read_json
from reprolab.core.params import ParamsError, check_config, load_yaml
from reprolab.preprocess.video.decode import decode_all, read_frames
from reprolab.preprocess.video.motion import (
    APPEARANCE_COLOURS,
    APPEARANCE_SHAPES,
    CENTRE_BAND,
    CLASS_NAMES,
    MOTIONS,
    ORDER_PAIRS,
    TRANSLATIONS,
    MotionClip,
    MotionSpec,
    draw_clip,
    render_clip,
    render_video,
    write_motion_dataset,
)
from tests.conftest import ROOT

SPEC = MotionSpec(size=32, frames=8, test_videos=3)
COARSE = dataclasses.replace(SPEC, task="appearance")
ENCODING = {"fps": 8, "crf": 0, "gop": 8, "pix_fmt": "yuv444p", "bframes": 0}
PARAMS = {
    "task": "motion",
    "size": 32,
    "frames": 12,
    "radius": 3.5,
    "speed": 1.25,
    "texture": 0.3,
    "test_videos": 200,
}


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_same_seed_gives_the_same_clip_and_another_seed_another():
    video, truth = render_clip(11, SPEC)
    again, truth_again = render_clip(11, SPEC)
    np.testing.assert_array_equal(video, again)
    assert truth == truth_again
    assert video.dtype == np.uint8 and video.shape == (8, 32, 32, 3)
    assert not np.array_equal(video, render_clip(12, SPEC)[0])


@pytest.mark.parametrize("spec", [SPEC, COARSE], ids=["motion", "appearance"])
def test_labels_cover_the_classes_and_name_them(spec):
    truths = [render_clip(seed, spec)[1] for seed in range(120)]
    assert {t["label"] for t in truths} == set(range(6))
    assert all(t["label_name"] == CLASS_NAMES[spec.task][t["label"]] for t in truths)
    assert len(set(CLASS_NAMES[spec.task])) == 6


def _check_motion(clip: MotionClip, spec: MotionSpec) -> None:
    """Everything a clip of `clip.motion` satisfies: both sprites wholly inside the frame on
    every frame, constant velocities; a translation moves both by `speed` in its direction, at
    least two radii apart; approach/separate move `speed / 2` each between touching and
    `2 * radius + span` apart, about a centre in CENTRE_BAND."""
    pos = clip.positions
    assert pos.min() >= spec.radius - 1e-3 and pos.max() <= spec.size - spec.radius + 1e-3
    steps = np.broadcast_to(clip.velocities, (spec.frames - 1, 2, 2))
    np.testing.assert_allclose(np.diff(pos, axis=0), steps, atol=1e-6)
    gap = np.linalg.norm(pos[:, 0] - pos[:, 1], axis=-1)
    if clip.motion in TRANSLATIONS:
        velocity = np.multiply(TRANSLATIONS[clip.motion], spec.speed)
        np.testing.assert_allclose(clip.velocities, [velocity, velocity], atol=1e-6)
        assert gap.min() >= 2 * spec.radius
    else:
        np.testing.assert_allclose(
            np.linalg.norm(clip.velocities, axis=1), spec.speed / 2, atol=1e-3
        )
        near, far = 2 * spec.radius, 2 * spec.radius + spec.speed * (spec.frames - 1)
        ends = (far, near) if clip.motion == "approach" else (near, far)
        np.testing.assert_allclose(gap[[0, -1]], ends, atol=1e-3)
        centre = pos[0].mean(axis=0)
        assert (centre >= CENTRE_BAND[0] * spec.size - 1e-3).all()
        assert (centre <= CENTRE_BAND[1] * spec.size + 1e-3).all()


@pytest.mark.parametrize("spec", [SPEC, COARSE], ids=["motion", "appearance"])
def test_sprites_stay_inside_the_frame_and_move_as_their_motion_says(spec):
    clips = [draw_clip(seed, spec) for seed in range(200)]
    assert {clip.motion for clip in clips} == set(MOTIONS)
    for clip in clips:
        _check_motion(clip, spec)


@pytest.mark.parametrize("pair", ORDER_PAIRS, ids=["-".join(p) for p in ORDER_PAIRS])
def test_a_clip_played_backwards_is_a_clip_of_the_paired_class(pair):
    """Only the frame order tells a pair apart: a clip with its frames reversed is a valid clip
    of the other class (the same sprites and background on the reversed path, which meets all
    that class's constraints), so its frame mean is the same."""
    for forward, backward in (pair, pair[::-1]):
        clip = next(c for c in (draw_clip(s, SPEC) for s in range(100)) if c.motion == forward)
        reversed_clip = dataclasses.replace(
            clip,
            label=MOTIONS.index(backward),
            motion=backward,
            positions=clip.positions[::-1],
            velocities=-clip.velocities,
        )
        _check_motion(reversed_clip, SPEC)
        video = render_video(clip, SPEC)
        backwards = render_video(reversed_clip, SPEC)
        np.testing.assert_array_equal(backwards, video[::-1])
        np.testing.assert_array_equal(backwards.mean(axis=0), video.mean(axis=0))


def test_in_the_motion_task_looks_do_not_follow_the_class():
    clips = [draw_clip(seed, SPEC) for seed in range(200)]
    for label in range(6):
        looks = {(c.shapes, c.colours) for c in clips if c.label == label}
        assert len(looks) > 3


def test_in_the_appearance_task_the_class_fixes_shape_and_colour_not_motion():
    truths = [render_clip(seed, COARSE)[1] for seed in range(120)]
    for label in range(6):
        mine = [t for t in truths if t["label"] == label]
        shape, colour = APPEARANCE_SHAPES[label // 2], APPEARANCE_COLOURS[label % 2]
        assert all(t["shapes"] == [shape, shape] for t in mine)
        assert all(t["colours"] == [colour, colour] for t in mine)
        assert all(t["label_name"] == f"{colour}_{shape}" for t in mine)
        assert len({t["motion"] for t in mine}) > 2


def test_texture_sets_the_background_amplitude():
    flat = dataclasses.replace(SPEC, texture=0.0)
    clip = draw_clip(3, flat)
    far = np.ones((32, 32), dtype=bool)  # pixels at least 1 px from every sprite's box
    for x, y in clip.positions.reshape(-1, 2):
        r = flat.radius + 1
        far[int(max(0, y - r)) : int(y + r) + 1, int(max(0, x - r)) : int(x + r) + 1] = False
    assert far.sum() > 200
    assert (render_video(clip, flat)[:, far] == 0).all()
    textured = render_video(clip, SPEC)[:, far]
    assert textured.max() <= round(0.3 * 255) and textured.std() > 5


def test_the_written_dataset_is_deterministic_split_and_decodes_to_the_clips(tmp_path):
    manifests = [
        write_motion_dataset(tmp_path / name, 8, 5, SPEC, ENCODING, show_progress=False)
        for name in ("a", "b")
    ]
    manifest = manifests[0]
    assert manifest.equals(manifests[1])
    for sub in ("videos/clip_00000.mp4", "videos/clip_00007.mp4", "annotations/clip_00003.json",
                "manifest.csv"):  # fmt: skip
        assert _sha(tmp_path / "a" / sub) == _sha(tmp_path / "b" / sub)
    assert list(manifest.columns) == ["video", "split", "label", "label_name"]
    assert manifest["video"].tolist() == [f"clip_{i:05d}" for i in range(8)]
    assert manifest["split"].tolist() == ["train"] * 5 + ["test"] * 3
    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "a/manifest.csv"), manifest)
    video, truth = render_clip(derive_seed(5, "motion", 6), SPEC)
    assert read_json(tmp_path / "a/annotations/clip_00006.json") == truth
    assert manifest.loc[6, "label"] == truth["label"]
    path = tmp_path / "a/videos/clip_00006.mp4"
    decoded = decode_all(path).frames
    assert decoded.shape == video.shape
    assert np.abs(decoded.astype(int) - video.astype(int)).max() <= 2
    np.testing.assert_array_equal(read_frames(path, [7, 0, 3]).frames, decoded[[7, 0, 3]])


@pytest.mark.parametrize("n_videos", [3, 2])
def test_a_dataset_without_train_videos_is_refused(tmp_path, n_videos):
    with pytest.raises(
        ValueError, match=rf"test_videos \(3\) must be less than n_videos \({n_videos}"
    ):
        write_motion_dataset(tmp_path, n_videos, 0, SPEC, ENCODING, show_progress=False)
    assert not tmp_path.joinpath("manifest.csv").exists()


def test_from_params_builds_the_spec():
    spec = MotionSpec.from_params(PARAMS)
    assert spec == MotionSpec(**PARAMS)
    assert isinstance(MotionSpec.from_params({**PARAMS, "radius": 3}).radius, float)


def test_from_params_names_a_missing_key():
    params = {key: value for key, value in PARAMS.items() if key != "speed"}
    with pytest.raises(KeyError, match=r"MotionSpec: missing key\(s\) \['speed'\]"):
        MotionSpec.from_params(params)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"spin": 1}, r"unknown key\(s\) \['spin'\]"),
        ({"task": "colour"}, "key 'task' must be one of motion, appearance"),
        ({"size": 32.0}, "key 'size' must be an integer"),
        ({"frames": 1}, "key 'frames' must be an integer of at least 2"),
        ({"test_videos": True}, "key 'test_videos' must be an integer"),
        ({"radius": -1.0}, "key 'radius' must be a positive number"),
        ({"speed": float("nan")}, "key 'speed' must be a positive number"),
        ({"texture": 1.5}, r"key 'texture' must be a number in \[0, 1\]"),
        ({"size": 16}, "keys 'radius', 'speed' and 'frames' do not fit key 'size'"),
    ],
)
def test_from_params_names_an_unknown_or_bad_key(change, message):
    with pytest.raises(ValueError, match=message):
        MotionSpec.from_params({**PARAMS, **change})


def _with_dataset(synthetic: dict) -> dict:
    config = load_yaml(ROOT / "params.yaml")
    config["video"]["datasets"]["synthmotion"] = {"seed": 0, "synthetic": synthetic}
    return config


MOTION_DATASET = {
    "n_videos": 600,
    "motion": dict(PARAMS),
    "encoding": {"fps": 8, "crf": 0, "gop": 12, "pix_fmt": "yuv444p", "bframes": 0},
}


def test_the_params_schema_accepts_a_motion_dataset():
    check_config(_with_dataset(copy.deepcopy(MOTION_DATASET)))


def test_the_params_schema_wants_exactly_one_of_scene_and_motion():
    config = load_yaml(ROOT / "params.yaml")
    scene = config["video"]["datasets"]["sprites"]["synthetic"]["scene"]
    both = {**copy.deepcopy(MOTION_DATASET), "scene": scene}
    with pytest.raises(ParamsError, match=r"key 'video.datasets.synthmotion.synthetic'"):
        check_config(_with_dataset(both))
    neither = {key: v for key, v in MOTION_DATASET.items() if key != "motion"}
    with pytest.raises(ParamsError, match=r"key 'video.datasets.synthmotion.synthetic'"):
        check_config(_with_dataset(copy.deepcopy(neither)))


@pytest.mark.parametrize(
    ("key", "value"),
    [("task", "colour"), ("size", 20), ("frames", 3), ("texture", 1.5), ("test_videos", 0)],
)
def test_the_params_schema_names_a_bad_motion_key(key, value):
    dataset = copy.deepcopy(MOTION_DATASET)
    dataset["motion"][key] = value
    with pytest.raises(ParamsError, match=rf"synthmotion.synthetic.motion.{key}'"):
        check_config(_with_dataset(dataset))
