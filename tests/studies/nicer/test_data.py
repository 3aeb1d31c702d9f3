"""A nicer cohort read from feature files and a manifest: standardised features, heterogeneity
from the nuisances column, unusable slides left out, and the seeded stratified split."""

from __future__ import annotations

import logging

import numpy as np
import pandas as pd
import pytest

from reprolab.core.io import write_h5
from reprolab.studies.nicer.data import heterogeneity, load_cohort, stratified_split

DIM = 3
MANIFEST = [
    # slide, label, nuisances, tiles (None: no features file)
    ("s0", 0, "stroma_dense;lymphoid", 7),
    ("s1", 1, "stroma_dense;necrosis;blood;lymphoid", 5),
    ("s2", 0, "", 4),
    ("s3", 1, "blood", 6),
    ("s4", 1, "necrosis", None),
    ("s5", 0, "stroma_wavy", 0),
]


def write_cohort(root, manifest=MANIFEST, nuisances: bool = True):
    """features/<slide>.h5 for every slide with a tile count, each slide's features drawn around
    its own mean and scale; the manifest CSV. Returns (features dir, CSV, raw features)."""
    rng = np.random.default_rng(0)
    features_dir = root / "features"
    raw = {}
    for index, (slide, _, _, tiles) in enumerate(manifest):
        if tiles is None:
            continue
        x = (5.0 + index + (1 + index) * rng.normal(size=(tiles, DIM))).astype(np.float32)
        coords = np.arange(2 * tiles, dtype=np.int64).reshape(tiles, 2) * 256
        write_h5(features_dir / f"{slide}.h5", {"features": x, "coords": coords})
        raw[slide] = x
    frame = pd.DataFrame(
        [(s, label, present) for s, label, present, _ in manifest],
        columns=["slide", "label", "nuisances"],
    )
    csv = root / "manifest.csv"
    (frame if nuisances else frame.drop(columns="nuisances")).to_csv(csv, index=False)
    return features_dir, csv, raw


def test_cohort_keeps_usable_slides_in_manifest_order(tmp_path, caplog):
    features_dir, csv, raw = write_cohort(tmp_path)
    with caplog.at_level(logging.WARNING):
        cohort = load_cohort(features_dir, csv)
    assert cohort.slides == ["s0", "s1", "s2", "s3"]
    assert cohort.labels.tolist() == [0, 1, 0, 1] and cohort.labels.dtype == np.int64
    assert [len(x) for x in cohort.features] == [7, 5, 4, 6]
    assert [len(c) for c in cohort.coords] == [7, 5, 4, 6]
    assert "s4: left out" in caplog.text and "s5: left out (no tiles)" in caplog.text


def test_features_are_standardised_with_the_pooled_tiles(tmp_path):
    features_dir, csv, raw = write_cohort(tmp_path)
    cohort = load_cohort(features_dir, csv)
    pooled = np.concatenate(cohort.features).astype(np.float64)
    np.testing.assert_allclose(pooled.mean(0), 0.0, atol=1e-5)
    np.testing.assert_allclose(pooled.std(0), 1.0, atol=1e-5)
    assert all(x.dtype == np.float32 for x in cohort.features)
    # One affine map for every slide: differences between slides are kept.
    original = np.concatenate([raw[s] for s in cohort.slides]).astype(np.float64)
    expected = (original - original.mean(0)) / original.std(0)
    np.testing.assert_allclose(pooled, expected, atol=1e-4)


def test_heterogeneity_counts_normal_tissue_nuisances_and_the_lesion(tmp_path):
    features_dir, csv, _ = write_cohort(tmp_path)
    cohort = load_cohort(features_dir, csv)
    assert cohort.heterogeneity.tolist() == [3.0, 6.0, 1.0, 3.0]
    assert heterogeneity(csv)["s4"] == 3.0  # the table covers every row of the manifest


def test_heterogeneity_reads_slide_stems(tmp_path):
    csv = tmp_path / "labels.csv"
    pd.DataFrame(
        {"slide": ["slides/a.svs", "b"], "label": [1, 0], "nuisances": ["blood;lymphoid", ""]}
    ).to_csv(csv, index=False)
    assert heterogeneity(csv) == {"a": 4.0, "b": 1.0}


def test_without_a_nuisances_column_heterogeneity_is_unknown(tmp_path):
    features_dir, csv, _ = write_cohort(tmp_path, nuisances=False)
    assert heterogeneity(csv) == {}
    cohort = load_cohort(features_dir, csv)
    assert len(cohort.slides) == 4 and np.isnan(cohort.heterogeneity).all()


def test_a_cohort_without_usable_features_is_rejected(tmp_path):
    _, csv, _ = write_cohort(tmp_path, [("s0", 0, "", None), ("s1", 1, "", 0)])
    with pytest.raises(ValueError, match="no slide of .* has usable tile features"):
        load_cohort(tmp_path / "features", csv)


def test_stratified_split_holds_out_both_classes_per_seed():
    labels = np.array([0] * 12 + [1] * 8)
    test = stratified_split(labels, 0.25, seed=0)
    assert test.dtype == bool and test.shape == (20,)
    assert (test & (labels == 0)).sum() == 3 and (test & (labels == 1)).sum() == 2
    assert np.array_equal(stratified_split(labels, 0.25, seed=0), test)
    others = [stratified_split(labels, 0.25, seed=s) for s in range(1, 6)]
    assert any(not np.array_equal(other, test) for other in others)


def test_stratified_split_keeps_a_training_slide_and_a_test_slide_per_class():
    labels = np.array([0, 0, 1, 1, 1])
    for fraction in (0.01, 0.99):
        test = stratified_split(labels, fraction, seed=1)
        for value in (0, 1):
            held = test[labels == value]
            assert held.any() and not held.all()


def test_stratified_split_rejects_a_label_with_one_slide():
    with pytest.raises(ValueError, match="label 1 has 1 slide"):
        stratified_split(np.array([0, 0, 0, 1]), 0.3, seed=0)
