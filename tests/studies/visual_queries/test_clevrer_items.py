"""The three families on CLEVRER annotations and clips, and the items.jsonl a seed gets."""

from __future__ import annotations

import numpy as np
import pytest

from reprolab.studies.visual_queries.clevrer import read_annotation, state_at
from reprolab.studies.visual_queries.clevrer_items import family_answer, make_items
from reprolab.studies.visual_queries.item_files import read_items
from reprolab.studies.visual_queries.items import FAMILIES, KINDS

from .real_data import clevrer_annotation, decode, write_json, write_mp4_video
from .test_clevrer import FLOOR, LOOKS, scene_body

CLIP = np.arange(0, 32, 4)  # the video frames behind 8 clip frames
CFG = {"vfp_context": 3, "vfp_horizon": 3}


@pytest.fixture()
def scene(tmp_path):
    return read_annotation(write_json(tmp_path / "annotation_10000.json", scene_body()))


def test_tfr_and_cmd_ask_the_clip_frames_around_the_first_collision(scene):
    tfr = family_answer(scene, CLIP, "tfr", CFG, FLOOR)
    assert (
        tfr.question
        == "which scene comes right after the red metal cube hits the blue rubber sphere ?"
    )
    assert tfr.truth == state_at(scene, 20, FLOOR) and tfr.pair == (0, 1) and tfr.n_frames == 8
    cmd = family_answer(scene, CLIP, "cmd", CFG, FLOOR)
    assert cmd.truth == state_at(scene, 12, FLOOR) and cmd.n_frames == 8


def test_vfp_shows_the_context_and_asks_horizon_clip_frames_on(scene):
    vfp = family_answer(scene, CLIP, "vfp", CFG, FLOOR)
    assert vfp.truth == state_at(scene, 20, FLOOR) and vfp.n_frames == 3
    assert vfp.pair == (0, 1)  # the collision at 16 lies between clip frames 8 and 20
    assert "3 clip frames after" in vfp.question
    with pytest.raises(ValueError, match="asks past a clip of 8 frames"):
        family_answer(scene, CLIP, "vfp", {"vfp_context": 6, "vfp_horizon": 3}, FLOOR)


def test_a_video_that_cannot_pose_a_family_gives_none(scene, tmp_path):
    early = np.arange(0, 16, 2)  # the clip ends before the collision
    assert family_answer(scene, early, "tfr", CFG, FLOOR) is None
    assert family_answer(scene, early, "cmd", CFG, FLOOR) is not None
    quiet = scene_body(10001)
    quiet["collision"] = []
    path = write_json(tmp_path / "annotation_10001.json", quiet)
    assert family_answer(read_annotation(path), CLIP, "cmd", CFG, FLOOR) is None
    with pytest.raises(ValueError, match="shows video frame 40 but the motion_trajectory has 32"):
        family_answer(scene, np.array([0, 40]), "tfr", CFG, FLOOR)


def _random_scene(index: int) -> dict:
    """Three objects at random cells before and after a collision of 0 and 1 at frame 16."""
    rng = np.random.default_rng(index)
    before, after = rng.uniform(-2.9, 2.9, (2, 3, 2))
    tracks = {
        i: [tuple(before[i]) if t < 16 else tuple(after[i]) for t in range(32)] for i in LOOKS
    }
    return clevrer_annotation(10000 + index, tracks, LOOKS, [(16, 0, 1)])


def test_make_items_writes_every_family_from_real_files(tmp_path):
    videos, annotations = tmp_path / "video_validation", tmp_path / "annotation_validation"
    videos.mkdir()
    for index in range(12):
        write_mp4_video(videos / f"video_{10000 + index:05d}.mp4", 32)
        folder = annotations / "annotation_10000-11000"
        write_json(folder / f"annotation_{10000 + index:05d}.json", _random_scene(index))
    frames = decode(videos, tmp_path / "frames", 8, ".mp4")
    params = {"n_test": 6, "items": CFG, "real_items": {"clevrer": {"floor": list(FLOOR)}}}
    summary = make_items(annotations, frames, 0, params, tmp_path / "seed0")
    splits = read_items(tmp_path / "seed0" / "items.jsonl")
    assert summary["items"] == {part: len(items) for part, items in splits.items()}
    for part in ("train", "test"):
        assert summary["items"][part] + sum(summary["skipped"][part].values()) == 6 * 3
        assert {item.family for item in splits[part]} == set(FAMILIES)
    for item in splits["train"] + splits["test"]:
        assert item.options[item.answer_idx] == item.truth and set(item.distractor_kinds) == set(
            KINDS
        )
        assert len(set(item.options)) == 4
    again = make_items(annotations, frames, 0, params, tmp_path / "again")
    assert again == summary
    assert (tmp_path / "again/items.jsonl").read_bytes() == (
        tmp_path / "seed0/items.jsonl"
    ).read_bytes()
    params["real_items"]["clevrer"]["floor"] = [1.0, 1.0]
    with pytest.raises(
        ValueError, match=r"real_items.clevrer.floor is \[1.0, 1.0\]; expected low < high"
    ):
        make_items(annotations, frames, 0, params, tmp_path / "bad")
