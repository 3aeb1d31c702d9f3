"""A nicer cohort: every slide's tile features, its label and its heterogeneity.

Input: a cohort's tile features (`reprolab wsi features` or CLAM layouts, read by
`preprocess.wsi.feature_bags`) and a labels CSV with columns `slide,label` (0/1): the synthetic
cohort's `manifest.csv`, or a real cohort's CSV.

Heterogeneity, the quantity slide-adaptive capacity should follow, is the number of distinct
tissue types a slide carries. A synthetic manifest says which nuisance textures each slide
shows (column `nuisances`); with normal tissue and, on a positive slide, the lesion, that is
its count. A real cohort has no such column, so its heterogeneity is unknown (NaN) and the
capacity claim is not testable there.

Choices: slides whose features are missing (failed upstream) or that have no tiles are left out
and logged, never silently counted; features are standardised per dimension with the mean and
standard deviation of every tile of the cohort (no labels are used, so all slides may
contribute); the train/test split is stratified by label and drawn from the seed.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from reprolab.preprocess.wsi.feature_bags import bag_path, read_feature_bag
from reprolab.studies.ssg.wsi_bags import read_labels
from reprolab.studies.ssg.wsi_bags import stratified_split as slide_split

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Cohort:
    """Slides in manifest order: names, standardised features, tile coords, labels (0/1) and
    heterogeneity (distinct tissue types; NaN when unknown)."""

    slides: list[str]
    features: list[np.ndarray]
    coords: list[np.ndarray]
    labels: np.ndarray
    heterogeneity: np.ndarray


def heterogeneity(labels_csv: str | Path) -> dict[str, float]:
    """Slide stem → number of tissue types (normal, each nuisance present, the lesion on a
    positive slide) from a synthetic manifest's `nuisances` column; {} without that column."""
    frame = pd.read_csv(labels_csv, dtype={"slide": str}, keep_default_na=False)
    if "nuisances" not in frame.columns:
        return {}
    return {
        Path(slide).stem: float(1 + len([t for t in present.split(";") if t]) + int(label))
        for slide, present, label in zip(
            frame["slide"], frame["nuisances"], frame["label"], strict=True
        )
    }


def load_cohort(features_dir: str | Path, labels_csv: str | Path) -> Cohort:
    """Every labelled slide of `labels_csv` with usable features, standardised (module doc)."""
    labels = read_labels(labels_csv)
    types = heterogeneity(labels_csv)
    slides, features, coords = [], [], []
    for slide in labels:
        try:
            bag = read_feature_bag(bag_path(features_dir, slide))
        except (FileNotFoundError, OSError, ValueError) as exc:
            log.warning("%s: left out (%s)", slide, exc)
            continue
        if len(bag.features) == 0:
            log.warning("%s: left out (no tiles)", slide)
            continue
        slides.append(slide)
        features.append(bag.features.astype(np.float32))
        coords.append(bag.coords)
    if not slides:
        raise ValueError(f"{features_dir}: no slide of {labels_csv} has usable tile features")
    pooled = np.concatenate(features).astype(np.float64)
    mean, std = pooled.mean(0), pooled.std(0) + 1e-6
    return Cohort(
        slides,
        [((x - mean) / std).astype(np.float32) for x in features],
        coords,
        np.array([labels[s] for s in slides], dtype=np.int64),
        np.array([types.get(s, np.nan) for s in slides], dtype=np.float64),
    )


def stratified_split(labels: np.ndarray, test_fraction: float, seed: int) -> np.ndarray:
    """Boolean test mask of the nicer study: ssg's stratified split (each class held out in
    proportion, at least one slide each) drawn from the seed with nicer's own salt."""
    return slide_split(labels, test_fraction, seed, salt=("nicer", "split"))
