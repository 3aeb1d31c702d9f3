"""Synthetic slides: real files, exact ground truth, sparse lesions, nuisances in both classes."""

import hashlib
import json
from dataclasses import fields, replace

import cv2
import h5py
import numpy as np
import openslide
import pandas as pd
import pytest

from reprolab.preprocess.wsi.synth import (
    CODE,
    LESION,
    MIMIC,
    NUISANCES,
    TEXTURE_NAMES,
    SlideSpec,
    SlideTruth,
    cohort_specs,
    read_truth,
    render_slide,
    tile_truth,
    write_cohort,
    write_synthetic_slide,
    write_truth,
)

PARAMS = {
    "n_slides": 6,
    "positive_fraction": 0.5,
    "width": 1536,
    "height": 1280,
    "mpp": 0.5,
    "formats": ["svs", "tiff"],
    "lesion_fraction": [0.02, 0.08],
    "nuisance": "hetero",
    "mimic": True,
    "faint_fraction": 0.15,
}


@pytest.fixture(scope="module")
def cohort(tmp_path_factory):
    out = tmp_path_factory.mktemp("cohort")
    specs = cohort_specs(PARAMS, seed=7)
    manifest = write_cohort(specs, out, show_progress=False)
    return out, specs, pd.read_csv(manifest)


def sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_cohort_specs_follow_params():
    specs = cohort_specs(PARAMS, seed=7)
    assert [s.name for s in specs] == [f"slide_{i:03d}" for i in range(6)]
    assert sum(s.label for s in specs) == 3
    assert [s.fmt for s in specs] == ["svs", "tiff"] * 3
    for spec in specs:
        assert (spec.width, spec.height, spec.mpp) == (1536, 1280, 0.5)
        if spec.label:
            assert 0.02 <= spec.lesion_fraction <= 0.08
        else:
            assert spec.lesion_fraction == 0
    assert len({s.seed for s in specs}) == 6
    assert cohort_specs(PARAMS, seed=7) == specs
    assert cohort_specs(PARAMS, seed=8) != specs


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"colour": 1}, "unknown keys \\['colour'\\]"),
        ({"n_slides": 0}, "n_slides"),
        ({"positive_fraction": 1.5}, "positive_fraction"),
        ({"formats": []}, "formats"),
        ({"lesion_fraction": [0.1, 0.05]}, "lesion_fraction"),
        ({"nuisance": "mixed"}, "nuisance"),
        ({"formats": ["png"]}, "fmt"),
    ],
)
def test_cohort_specs_reject_bad_params(change, message):
    with pytest.raises(ValueError, match=message):
        cohort_specs({**PARAMS, **change}, seed=0)


def test_cohort_specs_require_every_key():
    params = dict(PARAMS)
    del params["mimic"]
    with pytest.raises(ValueError, match="missing keys \\['mimic'\\]"):
        cohort_specs(params, seed=0)


def test_cohort_files_open_in_openslide(cohort):
    out, specs, manifest = cohort
    assert list(manifest["slide"]) == [s.name for s in specs]
    for spec, row in zip(specs, manifest.itertuples(), strict=True):
        assert row.file == f"slides/{spec.name}.{spec.fmt}"
        assert row.truth == f"truth/{spec.name}.h5"
        assert (row.label, row.fmt) == (spec.label, spec.fmt)
        with openslide.OpenSlide(out / row.file) as slide:
            vendor = slide.properties[openslide.PROPERTY_NAME_VENDOR]
            assert vendor == {"svs": "aperio", "tiff": "generic-tiff"}[spec.fmt]
            assert slide.dimensions == (1536, 1280)
            assert slide.level_count == 1
            assert float(slide.properties[openslide.PROPERTY_NAME_MPP_X]) == pytest.approx(0.5)


def test_larger_slide_has_a_pyramid(tmp_path):
    spec = SlideSpec("wide", 4096, 512, fmt="tiff", seed=3)
    write_synthetic_slide(spec, tmp_path / "wide.tiff", tmp_path / "wide.h5")
    with openslide.OpenSlide(tmp_path / "wide.tiff") as slide:
        assert slide.level_count == 2
        assert slide.level_dimensions[1] == (1024, 128)
        assert slide.properties[openslide.PROPERTY_NAME_VENDOR] == "generic-tiff"


def test_lesion_fraction_matches_request_on_positives_and_is_zero_on_negatives(cohort):
    out, specs, manifest = cohort
    for spec, row in zip(specs, manifest.itertuples(), strict=True):
        truth = read_truth(out / row.truth)
        tissue = (truth.labels > 0).sum()
        lesion = (truth.labels == LESION).sum()
        assert truth.lesion_fraction == pytest.approx(lesion / tissue)
        assert row.lesion_fraction == pytest.approx(truth.lesion_fraction, abs=1e-6)
        if spec.label:
            assert truth.lesion_fraction == pytest.approx(spec.lesion_fraction, abs=1.0 / tissue)
        else:
            assert lesion == 0


def test_nuisances_and_mimic_appear_in_both_classes(cohort):
    out, specs, manifest = cohort
    seen = {0: set(), 1: set()}
    for spec, row in zip(specs, manifest.itertuples(), strict=True):
        truth = read_truth(out / row.truth)
        codes = set(np.unique(truth.labels).tolist())
        present = {TEXTURE_NAMES[c] for c in codes} - {"background", "normal", "lesion"}
        assert present == set(truth.nuisances)
        assert row.nuisances.split(";") == list(truth.nuisances)
        assert MIMIC in codes
        assert len(present - {"lymphoid"}) >= 2
        seen[spec.label] |= present
    assert seen[0] & seen[1] >= {"lymphoid"}
    assert len(seen[0] & seen[1] & set(NUISANCES)) >= 2


def test_hetero_draws_nuisances_per_slide_and_shared_uses_all():
    hetero = [render_slide(SlideSpec(f"h{i}", 1024, 1024, seed=i))[1] for i in range(4)]
    assert len({t.nuisances for t in hetero}) > 1
    for i in range(2):
        _, truth = render_slide(SlideSpec(f"s{i}", 1024, 1024, seed=i, nuisance="shared"))
        assert truth.nuisances == NUISANCES
    _, truth = render_slide(SlideSpec("m", 1024, 1024, seed=0, mimic=False))
    assert "lymphoid" not in truth.nuisances
    assert not (truth.labels == MIMIC).any()


def test_hetero_shifts_nuisance_colour_and_shared_does_not():
    code = CODE["stroma_dense"]

    def mean_colours(specs: list[SlideSpec]) -> np.ndarray:
        colours = []
        for spec in specs:
            image, truth = render_slide(spec)
            if code not in truth.labels:
                continue
            cells = cv2.resize(image, truth.labels.shape[::-1], interpolation=cv2.INTER_AREA)
            inner = cv2.erode((truth.labels == code).astype(np.uint8), np.ones((3, 3))) > 0
            colours.append(cells[inner & ~truth.faint].mean(axis=0))
        return np.array(colours[:4])

    shared = mean_colours([SlideSpec(f"s{i}", 1024, 1024, seed=i, nuisance="shared")
                           for i in range(4)])  # fmt: skip
    hetero = mean_colours([SlideSpec(f"h{i}", 1024, 1024, seed=i) for i in range(10)])
    assert len(shared) == len(hetero) == 4
    assert np.ptp(hetero, axis=0).max() > 1.5 * np.ptp(shared, axis=0).max()


def test_faint_tissue_exists_and_is_pale(cohort):
    out, specs, manifest = cohort
    for spec, row in zip(specs, manifest.itertuples(), strict=True):
        truth = read_truth(out / row.truth)
        assert truth.faint_fraction == pytest.approx(spec.faint_fraction, abs=0.03)
        assert not (truth.faint & (truth.labels == LESION)).any()
        assert not (truth.faint & (truth.labels == 0)).any()
        with openslide.OpenSlide(out / row.file) as slide:
            thumb = np.asarray(slide.get_thumbnail(truth.labels.shape[::-1]).convert("RGB"))
        thumb = cv2.resize(thumb, truth.labels.shape[::-1], interpolation=cv2.INTER_AREA)
        saturation = cv2.cvtColor(thumb, cv2.COLOR_RGB2HSV)[..., 1]
        inner = lambda m: cv2.erode(m.astype(np.uint8), np.ones((3, 3))) > 0  # noqa: E731
        faint = np.median(saturation[inner(truth.faint)])
        stained = np.median(saturation[inner((truth.labels > 0) & ~truth.faint)])
        glass = np.median(saturation[inner(truth.labels == 0)])
        assert glass < faint < 30 < stained


def test_lesion_is_darker_than_normal_tissue():
    image, truth = render_slide(SlideSpec("d", 1536, 1536, label=1, lesion_fraction=0.1, seed=2))
    cells = cv2.resize(image, truth.labels.shape[::-1], interpolation=cv2.INTER_AREA)
    grey = cv2.cvtColor(cells, cv2.COLOR_RGB2GRAY).astype(float)
    lesion = grey[truth.labels == LESION].mean()
    normal = grey[(truth.labels == CODE["normal"]) & ~truth.faint].mean()
    glass = grey[truth.labels == 0].mean()
    assert lesion < normal - 20 < glass - 20


def test_same_spec_gives_identical_files(tmp_path):
    spec = SlideSpec("same", 1280, 1024, label=1, lesion_fraction=0.05, mimic=True, seed=11)
    for fmt in ("svs", "tiff"):
        paths = []
        for run in ("a", "b"):
            slide, truth = tmp_path / run / f"x.{fmt}", tmp_path / run / "x.h5"
            write_synthetic_slide(replace(spec, fmt=fmt), slide, truth)
            paths.append((slide, truth))
        assert sha(paths[0][0]) == sha(paths[1][0])
        assert sha(paths[0][1]) == sha(paths[1][1])
    other = tmp_path / "c" / "x.svs"
    write_synthetic_slide(replace(spec, seed=12), other, tmp_path / "c" / "x.h5")
    assert sha(other) != sha(tmp_path / "a" / "x.svs")


def test_truth_round_trips(tmp_path):
    spec = SlideSpec("rt", 1024, 768, label=1, lesion_fraction=0.04, seed=5, mpp=0.25)
    write_synthetic_slide(spec, tmp_path / "rt.svs", tmp_path / "rt.h5")
    _, truth = render_slide(spec)
    back = read_truth(tmp_path / "rt.h5")
    assert np.array_equal(back.labels, truth.labels)
    assert back.labels.shape == (48, 64)
    assert np.array_equal(back.faint, truth.faint)
    for field in ("name", "label", "lesion_fraction", "faint_fraction", "mpp", "mask_downsample",
                  "width", "height", "texture_names", "nuisances"):  # fmt: skip
        assert getattr(back, field) == getattr(truth, field), field
    assert back.texture_names[0] == "background" and back.texture_names[LESION] == "lesion"


def known_truth() -> SlideTruth:
    labels = np.zeros((8, 8), dtype=np.uint8)
    labels[:, :4] = CODE["normal"]
    labels[2:4, 2:4] = LESION
    labels[4:8, 4:8] = CODE["necrosis"]
    faint = np.zeros((8, 8), dtype=bool)
    faint[6:8, 0:2] = True
    return SlideTruth("k", labels, faint, 1, 4 / 32, 4 / 32, 0.5, 16, 128, 128, TEXTURE_NAMES, ())


def test_tile_truth_on_a_known_grid():
    coords = np.array([[0, 0], [32, 32], [16, 16], [64, 64], [96, 0], [0, 96], [120, 120]])
    result = tile_truth(known_truth(), coords, 32)
    np.testing.assert_allclose(result["lesion_fraction"], [0, 1, 0.25, 0, 0, 0, 0])
    np.testing.assert_allclose(result["tissue_fraction"], [1, 1, 1, 1, 0, 1, 0.25 * 0.25])
    np.testing.assert_allclose(result["faint_fraction"], [0, 0, 0, 0, 0, 1, 0])
    expected = [CODE["normal"], LESION, CODE["normal"], CODE["necrosis"], 0, CODE["normal"],
                CODE["necrosis"]]  # fmt: skip
    assert result["dominant"].tolist() == expected
    assert result["dominant"].dtype == np.uint8


def test_tile_truth_weights_partial_cells_exactly():
    # A tile offset by half a cell over the lesion's corner: 1.5 x 1.5 of its 2 x 2 cells.
    result = tile_truth(known_truth(), np.array([[40, 40]]), 32)
    assert result["lesion_fraction"][0] == pytest.approx(0.25 * 0.25 * 9)


def test_tile_truth_agrees_with_the_lesion_fraction_of_a_rendered_slide():
    _, truth = render_slide(SlideSpec("g", 2048, 2048, label=1, lesion_fraction=0.05, seed=4))
    ys, xs = np.mgrid[0:2048:256, 0:2048:256]
    result = tile_truth(truth, np.stack([xs.ravel(), ys.ravel()], axis=1), 256)
    lesion_area = result["lesion_fraction"].sum()
    assert lesion_area / result["tissue_fraction"].sum() == pytest.approx(truth.lesion_fraction)
    assert (result["dominant"] == LESION).sum() >= 1
    assert ((result["lesion_fraction"] > 0) & (result["tissue_fraction"] == 0)).sum() == 0


def test_tile_truth_rejects_bad_coords():
    with pytest.raises(ValueError, match="coords"):
        tile_truth(known_truth(), np.zeros((3, 3)), 32)
    with pytest.raises(ValueError, match="patch_size_level0"):
        tile_truth(known_truth(), np.zeros((3, 2)), 0)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("lesion_fraction", 1.0),
        ("lesion_fraction", -0.01),
        ("width", 100),
        ("height", 255),
        ("width", 1024.0),
        ("mpp", 0.0),
        ("fmt", "png"),
        ("label", 2),
        ("nuisance", "mixed"),
        ("mimic", "yes"),
        ("faint_fraction", 1.5),
        ("seed", -1),
        ("name", "a/b"),
    ],
)
def test_bad_spec_values_name_the_field(field, value):
    base = {"name": "ok", "width": 1024, "height": 1024, "label": 1}
    with pytest.raises(ValueError, match=f"{field}="):
        SlideSpec(**{**base, field: value})


def test_positive_slide_needs_a_lesion():
    with pytest.raises(ValueError, match="lesion_fraction=0.0"):
        SlideSpec("p", 1024, 1024, label=1, lesion_fraction=0.0)
    assert SlideSpec("n", 1024, 1024, label=0, lesion_fraction=0.0).lesion_fraction == 0


def test_write_cohort_rejects_duplicate_names(tmp_path):
    spec = SlideSpec("dup", 1024, 1024)
    with pytest.raises(ValueError, match="unique"):
        write_cohort([spec, spec], tmp_path, show_progress=False)


@pytest.mark.parametrize("count", [(0, 1), (2, 3), (5, 5)])
def test_nuisance_count_draws_the_number_of_nuisances_in_range(count):
    lo, hi = count
    drawn = []
    for i in range(10):
        _, truth = render_slide(SlideSpec(f"c{i}", 256, 256, seed=i, nuisance_count=count))
        assert set(truth.nuisances) <= set(NUISANCES)
        drawn.append(len(truth.nuisances))
    assert all(lo <= n <= hi for n in drawn)
    assert set(drawn) == set(range(lo, hi + 1))  # every count of the range occurs


def test_nuisance_count_leaves_the_mimic_to_the_mimic_flag():
    for i in range(4):
        spec = SlideSpec(f"m{i}", 256, 256, seed=i, mimic=True, nuisance_count=(0, 1))
        _, truth = render_slide(spec)
        assert "lymphoid" in truth.nuisances
        assert len(set(truth.nuisances) - {"lymphoid"}) <= 1


@pytest.mark.parametrize(
    "changes",
    [
        {"nuisance_count": (0, 1), "nuisance": "shared"},
        {"nuisance_count": (2, 1)},
        {"nuisance_count": (0, 6)},
        {"nuisance_count": (-1, 1)},
        {"nuisance_count": (0, 1.0)},
        {"nuisance_count": [0, 1]},
    ],
)
def test_bad_nuisance_count_is_rejected_by_name(changes):
    with pytest.raises(ValueError, match="nuisance_count="):
        SlideSpec("n", 1024, 1024, **changes)


def test_cohort_specs_pass_the_optional_nuisance_count_as_a_tuple():
    specs = cohort_specs({**PARAMS, "nuisance_count": [1, 3]}, seed=7)
    assert [s.nuisance_count for s in specs] == [(1, 3)] * PARAMS["n_slides"]
    plain = cohort_specs(PARAMS, seed=7)
    assert all(s.nuisance_count is None for s in plain)
    assert [replace(s, nuisance_count=None) for s in specs] == plain  # nothing else changes


@pytest.mark.parametrize("count", [3, [1, 2, 3], "1-3"])
def test_cohort_specs_reject_a_malformed_nuisance_count(count):
    with pytest.raises(ValueError, match="nuisance_count"):
        cohort_specs({**PARAMS, "nuisance_count": count}, seed=0)


def test_cohort_specs_reject_nuisance_count_with_shared_nuisances():
    with pytest.raises(ValueError, match="nuisance_count="):
        cohort_specs({**PARAMS, "nuisance": "shared", "nuisance_count": [0, 2]}, seed=0)


def test_truth_spec_names_nuisance_count_only_when_set(tmp_path):
    def stored_spec(spec: SlideSpec) -> dict:
        _, truth = render_slide(spec)
        write_truth(tmp_path / f"{spec.name}.h5", truth, spec)
        with h5py.File(tmp_path / f"{spec.name}.h5", "r") as handle:
            return json.loads(handle.attrs["spec"])

    old = stored_spec(SlideSpec("old", 256, 256, seed=1))
    assert set(old) == {f.name for f in fields(SlideSpec)} - {"nuisance_count"}
    new = stored_spec(SlideSpec("new", 256, 256, seed=1, nuisance_count=(1, 2)))
    assert new["nuisance_count"] == [1, 2]
    assert {k: v for k, v in new.items() if k not in ("name", "nuisance_count")} == {
        k: v for k, v in old.items() if k != "name"
    }
