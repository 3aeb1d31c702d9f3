"""CLEVRER's per-video annotation files, read as scenes with symbolic states.

CLEVRER ships one `annotation_<n>.json` per video `video_<n>.mp4` (under
`annotation_<split>/annotation_<a>-<b>/`), each with

- `object_property`: ``[{object_id, color, material, shape}]``;
- `motion_trajectory`: one entry per video frame, ``{frame_id, objects: [{object_id,
  location: [x, y, z], inside_camera_view, ...}]}``, every object in every frame;
- `collision`: ``[{object_ids: [a, b], frame_id, ...}]``.

`read_annotation` checks these keys and gives a `ClevrerScene`. Its symbolic state at a frame
(`state_at`) has one triple per object *inside the camera view* (an object outside it cannot
be asked about from the video): ``(object_id, appearance, cell)``, sorted by object id. The
object id is only a key (objects may look alike, so no attribute names one); `appearance`
indexes `APPEARANCES` ("red metal cube"), which never changes in CLEVRER; `cell` is one of a
3 x 3 grid over the floor, columns along world x and rows along world y, each cut into three
equal parts of `floor` = [low, high] (a location outside is put in the edge cell). The grid is
on the floor, not on the image: the annotation gives no camera, so no cell is named by where
it appears on screen.

The question files (`questions/<split>.json`: descriptive, explanatory, predictive and
counterfactual questions with their own choices) are not read: they ask about events in words
and have no scene-state options.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from reprolab.core.io import read_json
from reprolab.preprocess.video.synth import GRID, State

COLOURS = ("gray", "red", "blue", "green", "brown", "cyan", "purple", "yellow")
MATERIALS = ("rubber", "metal")
SHAPES = ("cube", "sphere", "cylinder")
APPEARANCES = tuple(f"{c} {m} {s}" for c in COLOURS for m in MATERIALS for s in SHAPES)
"""Every CLEVRER object's look, "<colour> <material> <shape>"; a state's appearance indexes it."""
ANNOTATION_NAME = re.compile(r"annotation_(\d+)\.json")


@dataclass(frozen=True)
class ClevrerScene:
    """One CLEVRER video's annotation: objects (by id), floor tracks and collisions."""

    path: Path  # the annotation file, for messages
    object_ids: tuple[int, ...]  # sorted
    appearances: tuple[int, ...]  # per object, an index into APPEARANCES
    locations: np.ndarray  # float [T, K, 2]: world x, y per frame and object
    visible: np.ndarray  # bool [T, K]: inside_camera_view
    collisions: tuple[tuple[int, tuple[int, int]], ...]  # (frame, (id, id)), in time order

    @property
    def n_frames(self) -> int:
        """Video frames the trajectory covers."""
        return len(self.locations)

    def appearance(self, object_id: int) -> str:
        """The words of one object's look ("red metal cube")."""
        return APPEARANCES[self.appearances[self.object_ids.index(object_id)]]


def video_name(path: Path) -> str:
    """The video stem of an annotation file: `annotation_10000.json` -> `video_10000`."""
    match = ANNOTATION_NAME.fullmatch(path.name)
    if match is None:
        raise ValueError(f"{path}: not a CLEVRER annotation name; expected annotation_<n>.json")
    return f"video_{match.group(1)}"


def annotation_paths(root: str | Path) -> dict[str, Path]:
    """Every `annotation_<n>.json` under `root` (any depth, as CLEVRER nests them in folders of
    a thousand) by video stem; ValueError for a missing folder or a video annotated twice."""
    root = Path(root)
    if not root.is_dir():
        raise ValueError(f"{root}: not a folder; expected CLEVRER's annotation_<split> folder")
    paths: dict[str, Path] = {}
    for path in sorted(root.rglob("annotation_*.json")):
        name = video_name(path)
        if name in paths:
            raise ValueError(f"{path}: {name} is annotated again (first in {paths[name]})")
        paths[name] = path
    return paths


def _get(entry: Any, key: str, kind: type, path: Path, where: str) -> Any:
    """`entry[key]` of type `kind` (a bool is no int); ValueError naming file, place and key."""
    if not isinstance(entry, dict) or key not in entry:
        raise ValueError(f"{path}: {where or 'the file '}has no key {key!r}")
    value = entry[key]
    if not isinstance(value, kind) or isinstance(value, bool) != (kind is bool):
        raise ValueError(f"{path}: {where}{key!r} is {value!r}; expected {kind.__name__}")
    return value


def _word(entry: dict, key: str, words: tuple[str, ...], path: Path, where: str) -> int:
    value = _get(entry, key, str, path, where)
    if value not in words:
        raise ValueError(f"{path}: {where}{key!r} is {value!r}; expected one of {list(words)}")
    return words.index(value)


def _objects(data: dict, path: Path) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Object ids (sorted) and their appearance indices from `object_property`."""
    looks = {}
    for k, entry in enumerate(_get(data, "object_property", list, path, "")):
        where = f"object_property[{k}]."
        object_id = _get(entry, "object_id", int, path, where)
        if object_id in looks:
            raise ValueError(f"{path}: {where}'object_id' {object_id} is listed twice")
        colour = _word(entry, "color", COLOURS, path, where)
        material = _word(entry, "material", MATERIALS, path, where)
        shape = _word(entry, "shape", SHAPES, path, where)
        looks[object_id] = APPEARANCES.index(
            f"{COLOURS[colour]} {MATERIALS[material]} {SHAPES[shape]}"
        )
    if not looks:
        raise ValueError(f"{path}: 'object_property' is empty; expected the scene's objects")
    ids = tuple(sorted(looks))
    return ids, tuple(looks[i] for i in ids)


def _tracks(data: dict, path: Path, ids: tuple[int, ...]) -> tuple[np.ndarray, np.ndarray]:
    """Floor locations [T, K, 2] and visibility [T, K] from `motion_trajectory`."""
    frames = _get(data, "motion_trajectory", list, path, "")
    locations = np.full((len(frames), len(ids), 2), np.nan)
    visible = np.zeros((len(frames), len(ids)), dtype=bool)
    seen_frames = set()
    for k, frame in enumerate(frames):
        t = _get(frame, "frame_id", int, path, f"motion_trajectory[{k}].")
        if not 0 <= t < len(frames) or t in seen_frames:
            raise ValueError(
                f"{path}: motion_trajectory[{k}].'frame_id' {t} is repeated or out of range; "
                f"expected each of 0..{len(frames) - 1} once"
            )
        seen_frames.add(t)
        for j, entry in enumerate(_get(frame, "objects", list, path, f"motion_trajectory[{k}].")):
            where = f"motion_trajectory[{k}].objects[{j}]."
            object_id = _get(entry, "object_id", int, path, where)
            if object_id not in ids:
                raise ValueError(
                    f"{path}: {where}'object_id' {object_id} is not in object_property"
                )
            location = _get(entry, "location", list, path, where)
            if len(location) < 2 or not all(isinstance(v, int | float) for v in location):
                raise ValueError(f"{path}: {where}'location' is {location!r}; expected [x, y, z]")
            slot = ids.index(object_id)
            locations[t, slot] = location[:2]
            visible[t, slot] = _get(entry, "inside_camera_view", bool, path, where)
    missing = np.argwhere(np.isnan(locations[..., 0]))
    if len(missing):
        t, slot = (int(v) for v in missing[0])
        raise ValueError(
            f"{path}: motion_trajectory frame {t} has no entry for object {ids[slot]}; "
            "expected every object in every frame"
        )
    return locations, visible


def _collisions(data: dict, path: Path, ids: tuple[int, ...], n_frames: int) -> tuple:
    """(frame, (id, id)) of every `collision`, in time order."""
    events = []
    for k, entry in enumerate(_get(data, "collision", list, path, "")):
        where = f"collision[{k}]."
        pair = _get(entry, "object_ids", list, path, where)
        frame = _get(entry, "frame_id", int, path, where)
        if len(pair) != 2 or any(i not in ids for i in pair) or pair[0] == pair[1]:
            raise ValueError(
                f"{path}: {where}'object_ids' is {pair!r}; expected two ids of object_property"
            )
        if not 0 <= frame < n_frames:
            raise ValueError(
                f"{path}: {where}'frame_id' {frame} is outside the trajectory's 0..{n_frames - 1}"
            )
        events.append((frame, (int(pair[0]), int(pair[1]))))
    return tuple(sorted(events))


def read_annotation(path: str | Path) -> ClevrerScene:
    """The scene of one `annotation_<n>.json`; ValueError naming the file, the key and what was
    expected for anything the study reads that is missing or malformed. A `video_filename`
    key, when present, must name the video the file name says."""
    path = Path(path)
    data = read_json(path)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a JSON object, got {type(data).__name__}")
    if "video_filename" in data and Path(str(data["video_filename"])).stem != video_name(path):
        raise ValueError(
            f"{path}: 'video_filename' is {data['video_filename']!r}; "
            f"expected {video_name(path)}.mp4"
        )
    ids, appearances = _objects(data, path)
    locations, visible = _tracks(data, path, ids)
    collisions = _collisions(data, path, ids, len(locations))
    return ClevrerScene(path, ids, appearances, locations, visible, collisions)


def cell_of(location: np.ndarray, floor: tuple[float, float]) -> int:
    """The floor cell (row-major, rows along y) of a world location; outside goes to the edge."""
    low, high = floor
    col, row = (min(GRID - 1, max(0, int((v - low) * GRID / (high - low)))) for v in location)
    return row * GRID + col


def state_at(scene: ClevrerScene, frame: int, floor: tuple[float, float]) -> State:
    """The symbolic state of the objects in view at video frame `frame`."""
    return tuple(
        (object_id, scene.appearances[k], cell_of(scene.locations[frame, k], floor))
        for k, object_id in enumerate(scene.object_ids)
        if scene.visible[frame, k]
    )


def load_scenes(paths: Mapping[str, Path], names: list[str]) -> dict[str, ClevrerScene]:
    """The scenes of the videos `names` from their annotation paths; ValueError naming a video
    that has none."""
    missing = [name for name in names if name not in paths]
    if missing:
        raise ValueError(
            f"no CLEVRER annotation for {len(missing)} decoded video(s), e.g. {missing[0]}; "
            f"expected annotation_{missing[0].removeprefix('video_')}.json"
        )
    return {name: read_annotation(paths[name]) for name in names}
