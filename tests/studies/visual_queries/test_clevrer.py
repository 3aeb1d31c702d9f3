"""CLEVRER annotation files read as scenes: states, the annotation layout, clear errors."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from reprolab.studies.visual_queries.clevrer import (
    APPEARANCES,
    annotation_paths,
    cell_of,
    load_scenes,
    read_annotation,
    state_at,
)

from .real_data import clevrer_annotation, write_json

FLOOR = (-3.0, 3.0)
LOOKS = {
    0: ("red", "metal", "cube"),
    1: ("blue", "rubber", "sphere"),
    2: ("green", "rubber", "cylinder"),
}


def scene_body(scene_index: int = 10000) -> dict:
    """32 frames: 0 and 1 meet at frame 16 (then sit in the centre column); 2 enters at 4."""
    tracks = {
        0: [(-2.0, -2.0) if t < 16 else (-0.5, -2.0) for t in range(32)],
        1: [(2.0, -2.0) if t < 16 else (0.5, 0.0) for t in range(32)],
        2: [(2.0, 2.0)] * 32,
    }
    return clevrer_annotation(scene_index, tracks, LOOKS, [(16, 0, 1)], {2: range(4)})


def look(i: int) -> int:
    return APPEARANCES.index(" ".join(LOOKS[i]))


def test_a_scene_has_its_objects_tracks_and_collisions(tmp_path):
    scene = read_annotation(write_json(tmp_path / "annotation_10000.json", scene_body()))
    assert scene.object_ids == (0, 1, 2) and scene.n_frames == 32
    assert scene.collisions == ((16, (0, 1)),)
    assert scene.appearance(0) == "red metal cube"
    assert state_at(scene, 0, FLOOR) == ((0, look(0), 0), (1, look(1), 2))  # 2 out of view
    assert state_at(scene, 16, FLOOR) == ((0, look(0), 1), (1, look(1), 4), (2, look(2), 8))


def test_cells_cut_the_floor_in_three_and_clamp_outside():
    assert [cell_of(np.array([x, -2.9]), FLOOR) for x in (-2.9, 0.0, 2.9)] == [0, 1, 2]
    assert cell_of(np.array([9.0, 9.0]), FLOOR) == 8 and cell_of(np.array([-9.0, 0.0]), FLOOR) == 3


def test_annotations_are_found_at_any_depth_by_video(tmp_path):
    root = tmp_path / "annotation_validation"
    write_json(root / "annotation_10000-11000" / "annotation_10000.json", scene_body())
    write_json(root / "annotation_10000-11000" / "annotation_10001.json", scene_body(10001))
    paths = annotation_paths(root)
    assert sorted(paths) == ["video_10000", "video_10001"]
    assert load_scenes(paths, ["video_10001"])["video_10001"].n_frames == 32
    with pytest.raises(ValueError, match="no CLEVRER annotation .* video_10002.*annotation_10002"):
        load_scenes(paths, ["video_10002"])
    write_json(root / "other" / "annotation_10000.json", scene_body())
    with pytest.raises(ValueError, match="video_10000 is annotated again"):
        annotation_paths(root)
    with pytest.raises(ValueError, match="not a folder"):
        annotation_paths(tmp_path / "missing")


def _broken(edit) -> dict:
    body = copy.deepcopy(scene_body())
    edit(body)
    return body


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda b: b.pop("collision"), "has no key 'collision'"),
        (
            lambda b: b["object_property"][1].update(color="pink"),
            r"object_property\[1\]\.'color' is 'pink'; expected one of \['gray'",
        ),
        (
            lambda b: b["object_property"][0].update(object_id="0"),
            r"object_property\[0\]\.'object_id' is '0'; expected int",
        ),
        (
            lambda b: b["motion_trajectory"][3]["objects"].pop(),
            "motion_trajectory frame 3 has no entry for object 2",
        ),
        (
            lambda b: b["motion_trajectory"][5]["objects"][0].update(inside_camera_view=1),
            r"objects\[0\]\.'inside_camera_view' is 1; expected bool",
        ),
        (
            lambda b: b["motion_trajectory"][2].update(frame_id=40),
            r"'frame_id' 40 is repeated or out of range; expected each of 0..31 once",
        ),
        (
            lambda b: b["collision"][0].update(object_ids=[0, 7]),
            r"collision\[0\]\.'object_ids' is \[0, 7\]; expected two ids",
        ),
        (
            lambda b: b.update(video_filename="video_10001.mp4"),
            "'video_filename' is 'video_10001.mp4'; expected video_10000.mp4",
        ),
    ],
)
def test_bad_annotations_name_the_file_and_key(tmp_path, edit, message):
    path = write_json(tmp_path / "annotation_10000.json", _broken(edit))
    with pytest.raises(ValueError, match=message) as raised:
        read_annotation(path)
    assert str(path) in str(raised.value)
