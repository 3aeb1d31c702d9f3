"""A task's labelled clips: the video stage's `clips.h5` joined with a labels table.

The clips come from `reprolab video frames` (data/video/<dataset>/frames/clips.h5: `clips`
uint8 [N, T, H, W, 3] and `videos` [N], uniform segment sampling). The labels table is a CSV
with one row per video: `video` (the file stem), `split` (`train` or `test`) and `label` (an
integer class). The synthetic datasets' manifest.csv is such a table; at paper scale it is the
CSV that names each real video's class and split (docs/studies/strap.md says how to write it).

A labelled video that the video stage did not process (its process_list.csv says why) has no
clip: it is left out and counted in the log, so one bad file costs one example, not the task.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import h5py
import numpy as np
import pandas as pd

LOG = logging.getLogger(__name__)
LABEL_COLUMNS = ("video", "split", "label")
SPLITS = ("train", "test")


@dataclass(frozen=True)
class ClipSet:
    """The clips of one split: uint8 [N, T, H, W, 3] and integer labels [N]."""

    clips: np.ndarray
    labels: np.ndarray

    def __len__(self) -> int:
        return len(self.labels)

    def subset(self, rows: np.ndarray) -> ClipSet:
        """The clips at `rows`, in that order."""
        return ClipSet(self.clips[rows], self.labels[rows])


def read_labels(path: str | Path) -> pd.DataFrame:
    """The labels table at `path`, checked: the columns, the splits, integer labels."""
    path = Path(path)
    table = pd.read_csv(path, dtype={"video": str})
    missing = [c for c in LABEL_COLUMNS if c not in table.columns]
    if missing:
        raise ValueError(
            f"{path}: labels table lacks column(s) {missing}; expected {LABEL_COLUMNS}"
        )
    unknown = sorted(set(table["split"]) - set(SPLITS))
    if unknown:
        raise ValueError(f"{path}: split values {unknown}; expected one of {list(SPLITS)}")
    if not pd.api.types.is_integer_dtype(table["label"]) or (table["label"] < 0).any():
        raise ValueError(f"{path}: column label must hold non-negative integers")
    if table["video"].duplicated().any():
        raise ValueError(
            f"{path}: video {table['video'][table['video'].duplicated()].iloc[0]!r} twice"
        )
    return table


def load_task(frames_dir: str | Path, labels_path: str | Path) -> dict[str, ClipSet]:
    """{split: ClipSet} of the clips in `frames_dir`/clips.h5 labelled by `labels_path`.

    Rows keep the order of clips.h5 (name order). Raises ValueError when a split has no clip.
    """
    clips_path = Path(frames_dir) / "clips.h5"
    labels = read_labels(labels_path).set_index("video")
    with h5py.File(clips_path, "r") as handle:
        files = [n.decode() if isinstance(n, bytes) else str(n) for n in handle["videos"][()]]
        names = [Path(name).stem for name in files]  # clips.h5 names files, the table stems
        clips = handle["clips"][()]
    known = np.array([name in labels.index for name in names], dtype=bool)
    if not known.all():
        raise ValueError(
            f"{clips_path}: video {names[int(np.argmin(known))]!r} has no row in {labels_path}"
        )
    unprocessed = len(labels) - len(names)
    if unprocessed:
        LOG.warning(
            "%s: %d labelled video(s) have no clip (see process_list.csv)", clips_path, unprocessed
        )
    split = labels.loc[names, "split"].to_numpy()
    label = labels.loc[names, "label"].to_numpy(dtype=np.int64)
    task = {}
    for name in SPLITS:
        rows = np.flatnonzero(split == name)
        if rows.size == 0:
            raise ValueError(f"{clips_path}: no {name} clip (labels {labels_path})")
        task[name] = ClipSet(clips[rows], label[rows])
    return task


def class_count(task: dict[str, ClipSet]) -> int:
    """The number of classes: one more than the largest label of either split."""
    return int(max(s.labels.max() for s in task.values())) + 1


def validation_split(train: ClipSet, fraction: float, seed: int) -> tuple[ClipSet, ClipSet]:
    """Hold out `fraction` of `train` (a permutation drawn from `seed`) for tuning."""
    order = np.random.default_rng(seed).permutation(len(train))
    held = max(1, int(round(fraction * len(train))))
    return train.subset(np.sort(order[held:])), train.subset(np.sort(order[:held]))
