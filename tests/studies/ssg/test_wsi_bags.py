"""Bags from real synthetic slides: synthesis → tiling → features → bags with tile truth."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from reprolab.core.io import write_csv
from reprolab.preprocess.wsi.features import extract_cohort
from reprolab.preprocess.wsi.synth import cohort_specs, write_cohort
from reprolab.preprocess.wsi.tiling import TilingOptions, tile_slides
from reprolab.studies.ssg.wsi_bags import make_wsi_bags, read_labels, stratified_split

COHORT = {
    "n_slides": 6,
    "positive_fraction": 0.5,
    "width": 1280,
    "height": 1280,
    "mpp": 0.5,
    "formats": ["svs", "tiff"],
    "lesion_fraction": [0.05, 0.08],
    "nuisance": "hetero",
    "mimic": True,
    "faint_fraction": 0.1,
}
ENCODER = {"kind": "random_conv", "seed": 0, "input_size": 32, "widths": [8, 16]}
SPEC = {"generator": "wsi", "cohort": "t", "test_fraction": 0.5, "lesion_threshold": 0.5}


@pytest.fixture(scope="module")
def cohort(tmp_path_factory) -> Path:
    """A tiled and embedded synthetic cohort: raw/ (slides, truth, manifest), tiles/, features/."""
    root = tmp_path_factory.mktemp("wsi_bags")
    write_cohort(cohort_specs(COHORT, seed=3), root / "raw", show_progress=False)
    options = TilingOptions(patch_size=128)
    tile_slides(root / "raw" / "slides", root / "tiles", options, workers=1, show_progress=False)
    extract_cohort(
        root / "raw" / "slides",
        root / "tiles" / "patches",
        root / "features",
        ENCODER,
        batch_size=32,
        workers=0,
        threads=1,
        show_progress=False,
    )
    return root


def test_bags_follow_the_slides_and_their_truth(cohort: Path):
    raw = cohort / "raw"
    train, test = make_wsi_bags(SPEC, 0, cohort / "features", raw / "manifest.csv", raw / "truth")
    assert len(train) + len(test) == 6
    # 3 slides per class, test_fraction 0.5: round(1.5) = 2 held out per class
    assert sorted(train.y.tolist()) == [0, 1] and sorted(test.y.tolist()) == [0, 0, 1, 1]
    bags = [
        *zip(train.X, train.y, train.instance_labels, strict=True),
        *zip(test.X, test.y, test.instance_labels, strict=True),
    ]
    for x, label, instances in bags:
        assert x.dtype == np.float32 and x.shape[1] == 32 and instances.shape == (len(x),)
        if label == 0:
            assert instances.sum() == 0
    positives = [instances.mean() for _, label, instances in bags if label == 1]
    assert all(0 < share < 0.3 for share in positives), positives


def test_split_is_seeded_and_stratified():
    labels = np.array([0] * 6 + [1] * 4)
    first = stratified_split(labels, 0.5, seed=0)
    assert np.array_equal(first, stratified_split(labels, 0.5, seed=0))
    assert first[labels == 0].sum() == 3 and first[labels == 1].sum() == 2
    seeds = {tuple(stratified_split(labels, 0.5, seed=s)) for s in range(5)}
    assert len(seeds) > 1


def test_real_cohort_without_truth_and_a_missing_slide(cohort: Path, tmp_path: Path):
    manifest = pd.read_csv(cohort / "raw" / "manifest.csv")
    labels = pd.DataFrame(
        {"slide": [*manifest["file"], "gone.svs"], "label": [*manifest["label"], 1]}
    )
    write_csv(tmp_path / "labels.csv", labels)
    train, test = make_wsi_bags(SPEC, 1, cohort / "features", tmp_path / "labels.csv", None)
    assert len(train) + len(test) == 6  # the slide without features is left out
    assert all(
        instances.sum() == 0 for instances in [*train.instance_labels, *test.instance_labels]
    )


def test_bad_labels_name_the_file_and_column(tmp_path: Path):
    write_csv(tmp_path / "l.csv", pd.DataFrame({"slide": ["a"], "y": [1]}))
    with pytest.raises(ValueError, match=r"l.csv: columns \['label'\] missing"):
        read_labels(tmp_path / "l.csv")
    write_csv(tmp_path / "m.csv", pd.DataFrame({"slide": ["a"], "label": [2]}))
    with pytest.raises(ValueError, match=r"m.csv: column 'label' must be 0 or 1"):
        read_labels(tmp_path / "m.csv")


def test_too_few_usable_slides_is_an_error(tmp_path: Path):
    write_csv(tmp_path / "l.csv", pd.DataFrame({"slide": ["a", "b"], "label": [0, 1]}))
    with pytest.raises(ValueError, match="need at least two usable slides per class"):
        make_wsi_bags(SPEC, 0, tmp_path, tmp_path / "l.csv", None)
