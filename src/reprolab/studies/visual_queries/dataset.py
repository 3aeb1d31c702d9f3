"""The study's inputs: scenes (annotations), their decoded clips and the per-seed item sets.

The video family writes the scenes once (`data/raw/video/<dataset>`: mp4, annotation JSON,
manifest) and decodes their frames (`data/video/<dataset>/frames`: clips.h5, index.csv,
process_list.csv). Models see frames only through clips.h5, never the renderer; the
annotation gives the symbolic truth the items are built on.

A seed draws its own split of the videos (`split`: `n_test` test videos, the rest train, from
derive_seed(seed, "split")) and its own item randomness (the other video each distractor
layout comes from, answer slot, option renders), so seeds differ in data as the card's
"generator seeds" do, while the mp4 files are written once. A video whose frames failed to
decode is left out and counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pandas as pd

from reprolab.core.determinism import derive_seed
from reprolab.core.io import read_json
from reprolab.preprocess.video.synth import Scene, SceneSpec, scene_from_annotation
from reprolab.studies.visual_queries.items import Item, build_split


@dataclass(frozen=True)
class Corpus:
    """Decoded clips and scenes of one video dataset, keyed by video name."""

    clips: np.ndarray  # uint8 [N, T, H, W, 3]
    names: tuple[str, ...]
    scenes: dict[str, Scene]
    spec: SceneSpec
    failed: tuple[str, ...]
    _rows: dict[str, int] = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_rows", {name: row for row, name in enumerate(self.names)})

    def clip(self, name: str) -> np.ndarray:
        """The decoded frames of one video."""
        return self.clips[self._rows[name]]


def load_corpus(raw_dir: str | Path, frames_dir: str | Path, scene: dict[str, Any]) -> Corpus:
    """Read clips.h5, index.csv and process_list.csv of the frames stage, and the annotations."""
    raw_dir, frames_dir = Path(raw_dir), Path(frames_dir)
    index = pd.read_csv(frames_dir / "index.csv")
    status = pd.read_csv(frames_dir / "process_list.csv")
    with h5py.File(frames_dir / "clips.h5", "r") as handle:
        clips = handle["clips"][()]
    names = tuple(Path(str(v)).stem for v in index.sort_values("row")["video"])
    scenes = {
        name: scene_from_annotation(read_json(raw_dir / "annotations" / f"{name}.json"))
        for name in names
    }
    failed = tuple(Path(str(v)).stem for v in status.loc[status["status"] != "processed", "video"])
    return Corpus(clips, names, scenes, SceneSpec.from_params(scene), failed)


def split(names: tuple[str, ...], seed: int, n_test: int) -> dict[str, list[str]]:
    """Train and test video names for one seed."""
    if n_test >= len(names):
        raise ValueError(f"n_test={n_test} leaves no training videos (only {len(names)} decoded)")
    order = np.random.default_rng(derive_seed(seed, "split")).permutation(len(names))
    test = sorted(names[i] for i in order[:n_test])
    train = sorted(names[i] for i in order[n_test:])
    return {"train": train, "test": test}


def build_items(
    corpus: Corpus, videos: list[str], seed: int, cfg: dict[str, Any]
) -> tuple[list[Item], dict[str, int]]:
    """Items of every family for the split `videos` (`items.build_split`: the distractors'
    other layouts come from the same split), and how many each family had to skip."""
    return build_split(corpus.scenes, videos, corpus.spec, seed, cfg)
