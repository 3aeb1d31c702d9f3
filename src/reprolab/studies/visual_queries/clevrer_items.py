"""The three question families on CLEVRER videos, as option-grid items (paper scale).

Time is counted in *clip* frames: a model sees the frames the frame stage decoded
(`clip_index`), so every asked state is the annotation's state at the video frame behind a
clip frame. With the first collision at video frame c (`clevrer.ClevrerScene.collisions`):

- `tfr`: "which scene comes right after the <a> hits the <b>?" (objects named by their look,
  which a CLEVRER collision does not change): the state at the first clip frame after c; the
  pair is the colliding pair. The whole clip is shown.
- `cmd`: "which scene did you see just before the collision?": the state at the last clip
  frame before c; the pair is the colliding pair. The whole clip is shown.
- `vfp`: the first `vfp_context` clip frames are shown; "which scene comes `vfp_horizon` clip
  frames after the clip ends?" asks the state at clip frame vfp_context - 1 + vfp_horizon. The
  pair is the first collision after the shown frames up to the asked one, or the two objects
  in view closest on the floor at the asked frame.

The options are the study's grid (`items.build_item`): the answer's layout or another video's,
worn by the true objects or with the pair exchanged (for CLEVRER, where a collision changes
no colour, the swapped options put each of the two objects where the other is). A video poses
no item of a family (counted as skipped) when it has no collision, when the asked clip frame
does not exist, when a pair object is out of view at the asked frame, or when the two pair
objects look alike or share a cell (then exchanging them changes nothing one can see). An item
whose four options are not four different scenes once the object ids are dropped (what a view
shows) is skipped too.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from itertools import combinations
from pathlib import Path
from typing import Any

import numpy as np

from reprolab.studies.visual_queries.clevrer import (
    ClevrerScene,
    annotation_paths,
    load_scenes,
    state_at,
)
from reprolab.studies.visual_queries.clip_index import read_clip_index
from reprolab.studies.visual_queries.dataset import split
from reprolab.studies.visual_queries.item_files import write_split_items
from reprolab.studies.visual_queries.items import FAMILIES, Answer, Item, build_grid_split


def _answer(
    scene: ClevrerScene,
    question: str,
    frame: int,
    n_frames: int,
    pair: tuple[int, int],
    floor: tuple[float, float],
) -> Answer | None:
    """The answer at video frame `frame`, or None when the pair cannot be told apart there."""
    truth = state_at(scene, frame, floor)
    seen = {object_id: (look, cell) for object_id, look, cell in truth}
    if pair[0] not in seen or pair[1] not in seen:
        return None
    (look_a, cell_a), (look_b, cell_b) = seen[pair[0]], seen[pair[1]]
    if look_a == look_b or cell_a == cell_b:
        return None
    return Answer(question, truth, n_frames, pair)


def _collision_answer(
    scene: ClevrerScene, clip: np.ndarray, family: str, floor: tuple[float, float]
) -> Answer | None:
    """TFR or CMD: the state on the clip frame just after (tfr) or before (cmd) the first
    collision."""
    if not scene.collisions:
        return None
    collided, pair = scene.collisions[0]
    shown = clip[clip > collided] if family == "tfr" else clip[clip < collided]
    if not len(shown):
        return None
    if family == "tfr":
        a, b = (scene.appearance(i) for i in pair)
        question = f"which scene comes right after the {a} hits the {b} ?"
        frame = int(shown.min())
    else:
        question = "which scene did you see just before the collision ?"
        frame = int(shown.max())
    return _answer(scene, question, frame, len(clip), pair, floor)


def _vfp_answer(
    scene: ClevrerScene, clip: np.ndarray, cfg: Mapping[str, Any], floor: tuple[float, float]
) -> Answer | None:
    """VFP: the state `vfp_horizon` clip frames after the first `vfp_context`."""
    context, horizon = int(cfg["vfp_context"]), int(cfg["vfp_horizon"])
    if context - 1 + horizon >= len(clip):
        raise ValueError(
            f"visual_queries.items: vfp_context {context} + vfp_horizon {horizon} asks past a "
            f"clip of {len(clip)} frames (video.frames.num_frames)"
        )
    last, target = int(clip[context - 1]), int(clip[context - 1 + horizon])
    ahead = [pair for frame, pair in scene.collisions if last < frame <= target]
    if ahead:
        pair = ahead[0]
    else:  # a near miss: the two objects in view closest together at the asked frame
        in_view = [k for k in range(len(scene.object_ids)) if scene.visible[target, k]]
        if len(in_view) < 2:
            return None
        where = scene.locations[target]
        i, j = min(
            combinations(in_view, 2), key=lambda p: float(np.linalg.norm(where[p[0]] - where[p[1]]))
        )
        pair = (scene.object_ids[i], scene.object_ids[j])
    question = f"which scene comes {horizon} clip frames after the clip ends ?"
    return _answer(scene, question, target, context, pair, floor)


def family_answer(
    scene: ClevrerScene,
    clip: np.ndarray,
    family: str,
    cfg: Mapping[str, Any],
    floor: tuple[float, float],
) -> Answer | None:
    """What `family` asks of a CLEVRER video whose clip holds the video frames `clip` (see the
    module docstring), or None when the video cannot pose it. ValueError when a clip frame lies
    past the annotation's trajectory."""
    if int(clip.max()) >= scene.n_frames:
        raise ValueError(
            f"{scene.path}: the clip shows video frame {int(clip.max())} but the "
            f"motion_trajectory has {scene.n_frames} frames"
        )
    if family == "vfp":
        return _vfp_answer(scene, clip, cfg, floor)
    return _collision_answer(scene, clip, family, floor)


def _distinct_scenes(item: Item) -> bool:
    """Whether the four options show four different scenes once object ids are dropped."""
    shown = {frozenset(Counter((look, cell) for _, look, cell in o).items()) for o in item.options}
    return len(shown) == len(item.options)


def build_items(
    scenes: Mapping[str, ClevrerScene],
    clips: Mapping[str, np.ndarray],
    videos: list[str],
    seed: int,
    cfg: Mapping[str, Any],
    floor: tuple[float, float],
) -> tuple[list[Item], dict[str, int]]:
    """Items of every family for the split `videos` (`items.build_grid_split`: the other
    layouts come from the same split), and how many each family skipped."""
    items, skipped = build_grid_split(
        videos,
        lambda name, family: family_answer(scenes[name], clips[name], family, cfg, floor),
        seed,
    )
    kept = []
    for item in items:
        if _distinct_scenes(item):
            kept.append(item)
        else:
            skipped[item.family] += 1
    return kept, skipped


def make_items(
    annotations: str | Path,
    frames_dir: str | Path,
    seed: int,
    params: Mapping[str, Any],
    out_dir: str | Path,
) -> dict[str, Any]:
    """Write `seed`'s items.jsonl for the decoded CLEVRER videos of `frames_dir`, annotated
    under `annotations`; return the counts. `params` is the study's section: `n_test`, `items`
    and `real_items.clevrer.floor`."""
    index = read_clip_index(frames_dir)
    names = sorted(index.frames)
    scenes = load_scenes(annotation_paths(annotations), names)
    low, high = (float(v) for v in params["real_items"]["clevrer"]["floor"])
    if not low < high:
        raise ValueError(
            f"visual_queries.real_items.clevrer.floor is [{low}, {high}]; expected low < high"
        )
    videos = split(tuple(names), seed, int(params["n_test"]))
    return write_split_items(
        out_dir,
        videos,
        lambda members: build_items(
            scenes, index.frames, members, seed, params["items"], (low, high)
        ),
        FAMILIES,
        index.failed,
    )
