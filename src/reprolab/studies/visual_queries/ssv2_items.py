"""Future prediction on Something-Something v2 videos: which action does the clip go on to show?

An SSv2 annotation names the action of the whole video and nothing within it (`ssv2`), so of
the study's families only `vfp` can be posed, as anticipation: the model sees the first
`vfp_context` clip frames and picks, among four action templates, the one the video shows.
`tfr` and `cmd` need the time of an event and the scene's state around it, which SSv2 does not
annotate; no item of theirs is built. The options are text only: a template is a sentence, and
no image shows a template without also showing the objects and scene of one video.

An option is a template, held as the one-element state ``((0, class_index, 0),)`` so that the
items are `items.Item`s and go through `item_files` unchanged; a reader turns the class index
back into the template with the labels file. The answer is the video's template; the three
distractors are the templates of three other videos of the same split, drawn uniformly with
replacement from the item's seed (derive_seed(seed, "item", video, "vfp")). The item is skipped
(counted), never redrawn, when two of the four templates coincide: the four are then i.i.d.
draws of the split's templates conditioned on being distinct, so the answer is exchangeable
with the distractors given the options alone, as in the sprite items' grid. Templates are
shown without their objects ("Putting something into something"): the objects would give the
answer away to an object recogniser.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from reprolab.core.determinism import derive_seed
from reprolab.preprocess.video.synth import State
from reprolab.studies.visual_queries.clip_index import read_clip_index
from reprolab.studies.visual_queries.dataset import split
from reprolab.studies.visual_queries.item_files import write_split_items
from reprolab.studies.visual_queries.items import N_OPTIONS, Item
from reprolab.studies.visual_queries.ssv2 import Ssv2Video, read_labels, read_split

FAMILIES = ("vfp",)
"""The families SSv2 can pose (see the module docstring)."""
QUESTION = "which action does the clip go on to show ?"
KINDS = ("answer", "other_template")


def template_state(class_index: int) -> State:
    """The state an option of template `class_index` is held as."""
    return ((0, class_index, 0),)


def build_item(video: Ssv2Video, pool: list[Ssv2Video], n_frames: int, seed: int) -> Item | None:
    """The `vfp` item of `video` with distractor templates from `pool` (the split; the video
    itself is ignored), or None when it is skipped (see the module docstring)."""
    rng = np.random.default_rng(seed)
    others = [other for other in pool if other.id != video.id]
    if not others:
        return None
    drawn = [others[k] for k in rng.integers(len(others), size=N_OPTIONS - 1)]
    grid = [(KINDS[0], video), *((KINDS[1], other) for other in drawn)]
    if len({v.class_index for _, v in grid}) < N_OPTIONS:
        return None
    order = [grid[k] for k in rng.permutation(N_OPTIONS)]
    return Item(
        id=f"{video.id}:vfp",
        family="vfp",
        video=video.id,
        question=QUESTION,
        options=tuple(template_state(v.class_index) for _, v in order),
        answer_idx=[kind for kind, _ in order].index(KINDS[0]),
        distractor_kinds=tuple(kind for kind, _ in order),
        n_frames=n_frames,
        truth=template_state(video.class_index),
        sources=tuple(v.id for _, v in order),
    )


def build_items(
    videos: Mapping[str, Ssv2Video], names: list[str], seed: int, cfg: Mapping[str, Any]
) -> tuple[list[Item], dict[str, int]]:
    """The `vfp` items of the split `names`, in id order, and how many were skipped."""
    pool = [videos[name] for name in sorted(names)]
    items, skipped = [], dict.fromkeys(FAMILIES, 0)
    for video in pool:
        item = build_item(
            video, pool, int(cfg["vfp_context"]), derive_seed(seed, "item", video.id, "vfp")
        )
        if item is None:
            skipped["vfp"] += 1
        else:
            items.append(item)
    return items, skipped


def _check_clips(frames: Mapping[str, np.ndarray], names: list[str], context: int) -> None:
    """Every clip must go on past the frames shown, or the question asks for nothing unseen."""
    short = [name for name in names if len(frames[name]) <= context]
    if short:
        raise ValueError(
            f"visual_queries.items.vfp_context {context} shows every frame of the clip of "
            f"{short[0]} ({len(frames[short[0]])} frames); expected clips longer than it"
        )


def make_items(
    labels_path: str | Path,
    split_path: str | Path,
    frames_dir: str | Path,
    seed: int,
    params: Mapping[str, Any],
    out_dir: str | Path,
) -> dict[str, Any]:
    """Write `seed`'s items.jsonl for the videos of the split file that the frame stage in
    `frames_dir` decoded; return the counts (a split video that was not decoded is counted
    in `missing_videos`). `params` is the study's section: `n_test` and `items`."""
    videos = read_split(split_path, read_labels(labels_path))
    index = read_clip_index(frames_dir)
    names = sorted(name for name in videos if name in index.frames)
    _check_clips(index.frames, names, int(params["items"]["vfp_context"]))
    parts = split(tuple(names), seed, int(params["n_test"]))
    counts = write_split_items(
        out_dir,
        parts,
        lambda members: build_items(videos, members, seed, params["items"]),
        FAMILIES,
        index.failed,
    )
    return {**counts, "missing_videos": len(videos) - len(names)}
