"""MIL bags from whole-slide images: one bag per slide, its tile features as instances.

Input: a cohort's tile features (`reprolab wsi features`: `<features>/<slide>.h5`, or CLAM's
layouts, read by `preprocess.wsi.feature_bags`), the slide labels (the synthetic cohort's
`manifest.csv`, or a CSV with columns `slide,label` for a real cohort) and, for synthetic
slides, their ground truth (`truth/<slide>.h5`), from which a tile is a positive instance when
at least `lesion_threshold` of its area is lesion. Real cohorts without tile annotations get
all-zero instance labels, so their instance AUC is undefined (null).

Choices: slides whose features are missing (failed upstream) or that have no tiles are left
out and logged, never silently counted as negatives; the train/test split is stratified by
label and drawn from the seed, so every method of a seed sees the same split.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pandas as pd

from reprolab.core.determinism import derive_seed
from reprolab.preprocess.wsi.feature_bags import bag_path, read_feature_bag
from reprolab.preprocess.wsi.synth import read_truth, tile_truth
from reprolab.studies.ssg.data import Bags

log = logging.getLogger(__name__)


def read_labels(path: str | Path) -> dict[str, int]:
    """Slide stem → 0/1 label from a CSV with columns `slide` and `label`."""
    frame = pd.read_csv(path, dtype={"slide": str})
    missing = [c for c in ("slide", "label") if c not in frame.columns]
    if missing:
        raise ValueError(f"{path}: columns {missing} missing (found {list(frame.columns)})")
    bad = sorted(set(frame["label"]) - {0, 1})
    if bad:
        raise ValueError(f"{path}: column 'label' must be 0 or 1, found {bad}")
    return {Path(s).stem: int(v) for s, v in zip(frame["slide"], frame["label"], strict=True)}


def slide_bag(
    features_dir: Path, slide: str, truth_dir: Path | None, lesion_threshold: float
) -> tuple[np.ndarray, np.ndarray] | None:
    """(features, instance labels) of one slide, or None when it has no usable features."""
    try:
        bag = read_feature_bag(bag_path(features_dir, slide))
    except (FileNotFoundError, OSError, ValueError) as exc:
        log.warning("%s: left out (%s)", slide, exc)
        return None
    if len(bag.features) == 0:
        log.warning("%s: left out (no tiles)", slide)
        return None
    if truth_dir is None:
        return bag.features, np.zeros(len(bag.features), dtype=np.int64)
    truth = read_truth(truth_dir / f"{slide}.h5")
    lesion = tile_truth(truth, bag.coords, int(bag.attrs["patch_size_level0"]))["lesion_fraction"]
    return bag.features, (lesion >= lesion_threshold).astype(np.int64)


def stratified_split(
    labels: np.ndarray,
    test_fraction: float,
    seed: int,
    salt: tuple[str, ...] = ("ssg", "wsi_split"),
) -> np.ndarray:
    """Boolean test mask: `test_fraction` of each class (at least one per class) held out,
    drawn from `seed` and `salt` (each study its own); a class with fewer than two slides
    cannot be split and is an error."""
    rng = np.random.default_rng(derive_seed(seed, *salt))
    test = np.zeros(len(labels), dtype=bool)
    for value in (0, 1):
        members = np.flatnonzero(labels == value)
        if len(members) < 2:
            raise ValueError(
                f"label {value} has {len(members)} slide(s); a train/test split needs at "
                "least two of each label"
            )
        count = min(len(members) - 1, max(1, round(test_fraction * len(members))))
        test[rng.permutation(members)[:count]] = True
    return test


def make_wsi_bags(
    spec: dict,
    seed: int,
    features_dir: str | Path,
    labels_csv: str | Path,
    truth_dir: str | Path | None,
) -> tuple[Bags, Bags]:
    """(train, test) bags of a slide cohort, split by `seed` (see the module docstring)."""
    features_dir = Path(features_dir)
    truth = Path(truth_dir) if truth_dir else None
    slides, xs, instance_labels, ys = [], [], [], []
    for slide, label in sorted(read_labels(labels_csv).items()):
        found = slide_bag(features_dir, slide, truth, spec["lesion_threshold"])
        if found is not None:
            slides.append(slide)
            xs.append(found[0])
            instance_labels.append(found[1])
            ys.append(label)
    y = np.asarray(ys, dtype=np.int64)
    if min(np.sum(y == 0), np.sum(y == 1)) < 2:
        raise ValueError(
            f"{features_dir}: need at least two usable slides per class, got "
            f"{int(np.sum(y == 0))} negative and {int(np.sum(y == 1))} positive"
        )
    test = stratified_split(y, spec["test_fraction"], seed)

    def subset(mask: np.ndarray) -> Bags:
        index = np.flatnonzero(mask)
        return Bags([xs[i] for i in index], y[index], [instance_labels[i] for i in index])

    return subset(~test), subset(test)
