"""Tile features on real slides: h5 layout, determinism, workers, empty slides, cohort batches."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import openslide
import pandas as pd
import pytest
import torch

from reprolab.core.determinism import seed_everything
from reprolab.core.io import write_csv, write_h5
from reprolab.preprocess.wsi.coords_h5 import read_coords
from reprolab.preprocess.wsi.encoders import build_encoder
from reprolab.preprocess.wsi.feature_bags import read_feature_bag
from reprolab.preprocess.wsi.features import extract_cohort, extract_features
from reprolab.preprocess.wsi.slide_writer import write_slide

SPEC = {"kind": "random_conv", "seed": 0, "input_size": 32, "widths": [8, 16]}
TILE = 64


def slide_image(seed: int, side: int = 512) -> np.ndarray:
    """A smooth random RGB image, so JPEG tiles differ from place to place."""
    rng = np.random.default_rng(seed)
    coarse = rng.integers(0, 256, (side // 32, side // 32, 3), dtype=np.uint8)
    return np.kron(coarse, np.ones((32, 32, 1), dtype=np.uint8))


def make_tiled_slide(
    slides: Path, patches: Path, name: str, seed: int = 0, count: int | None = None
) -> np.ndarray:
    """Write `slides/<name>.svs` and `patches/<name>.h5` (a 64-px grid at level 0, first
    `count` tiles), as the tiling stage would; return the coords."""
    write_slide(slides / f"{name}.svs", slide_image(seed), mpp=0.5, tile=TILE)
    ys, xs = np.mgrid[0:512:TILE, 0:512:TILE]
    coords = np.stack([xs.ravel(), ys.ravel()], axis=1).astype(np.int64)[:count]
    attrs = {
        "patch_size": TILE,
        "patch_level": 0,
        "patch_size_level0": TILE,
        "mpp": 0.5,
        "target_mpp": 0.5,
        "downsample": 1.0,
        "level_dim": np.array([512, 512]),
        "name": name,
    }
    write_h5(patches / f"{name}.h5", {"coords": coords}, attrs)
    return coords


@pytest.fixture
def tiled(tmp_path: Path) -> tuple[Path, Path]:
    """One slide `a` with 20 tiles."""
    seed_everything(0, 2)
    make_tiled_slide(tmp_path / "slides", tmp_path / "patches", "a", count=20)
    return tmp_path / "slides" / "a.svs", tmp_path / "patches" / "a.h5"


def test_features_file_has_clams_layout(tiled, tmp_path):
    slide, coords_path = tiled
    encoder = build_encoder(SPEC)
    out = tmp_path / "features" / "a.h5"
    assert extract_features(slide, coords_path, out, encoder, 8, 0, 2, show_progress=False) == 20
    with h5py.File(out, "r") as handle:
        assert sorted(handle) == ["coords", "features"]
        features, coords = handle["features"][:], handle["coords"][:]
        attrs = dict(handle.attrs)
    assert features.shape == (20, encoder.dim) and features.dtype == np.float32
    assert coords.dtype == np.int64 and np.array_equal(coords, read_coords(coords_path)[0])
    assert attrs["patch_size"] == TILE and attrs["name"] == "a"
    assert list(attrs["level_dim"]) == [512, 512]
    assert attrs["encoder_kind"] == "random_conv" and attrs["encoder_dim"] == 32
    assert attrs["encoder_seed"] == 0 and attrs["encoder_name"] == "random_conv"
    bag = read_feature_bag(out)
    assert np.array_equal(bag.features, features) and np.array_equal(bag.coords, coords)


def test_features_are_the_encoders_output_on_each_tile(tiled, tmp_path):
    slide, coords_path = tiled
    encoder = build_encoder(SPEC)
    out = tmp_path / "a.h5"
    extract_features(slide, coords_path, out, encoder, 8, 0, 2, show_progress=False)
    features = read_feature_bag(out).features
    handle = openslide.OpenSlide(str(slide))
    for index in (0, 13):
        x, y = read_coords(coords_path)[0][index]
        tile = np.asarray(handle.read_region((int(x), int(y)), 0, (TILE, TILE)).convert("RGB"))
        with torch.inference_mode():
            expected = encoder(encoder.transform(tile)[None])[0].numpy()
        np.testing.assert_allclose(features[index], expected, rtol=1e-5, atol=1e-6)
    handle.close()
    assert not np.allclose(features[0], features[13])


def test_same_input_gives_byte_identical_files(tiled, tmp_path):
    slide, coords_path = tiled
    outs = [tmp_path / "one.h5", tmp_path / "two.h5"]
    for out in outs:
        seed_everything(0, 2)
        extract_features(slide, coords_path, out, build_encoder(SPEC), 8, 0, 2, show_progress=False)
    assert outs[0].read_bytes() == outs[1].read_bytes()


def test_workers_give_the_same_features(tiled, tmp_path):
    slide, coords_path = tiled
    encoder = build_encoder(SPEC)
    outs = {workers: tmp_path / f"w{workers}.h5" for workers in (0, 2)}
    for workers, out in outs.items():
        extract_features(slide, coords_path, out, encoder, 6, workers, 2, show_progress=False)
    assert outs[0].read_bytes() == outs[2].read_bytes()


def test_empty_coords_give_an_empty_features_file(tmp_path):
    make_tiled_slide(tmp_path / "slides", tmp_path / "patches", "e", count=0)
    encoder = build_encoder(SPEC)
    out = tmp_path / "e.h5"
    n = extract_features(
        tmp_path / "slides" / "e.svs", tmp_path / "patches" / "e.h5", out, encoder, 8, 0, 1
    )
    assert n == 0
    with h5py.File(out, "r") as handle:
        assert handle["features"].shape == (0, 32) and handle["features"].dtype == np.float32
        assert handle["coords"].shape == (0, 2) and handle["coords"].dtype == np.int64


def test_tiles_are_read_at_the_patch_level(tmp_path):
    image = slide_image(5, side=1024)
    write_slide(tmp_path / "p.svs", image, mpp=0.25, tile=64, min_level_size=128)
    handle = openslide.OpenSlide(str(tmp_path / "p.svs"))
    assert handle.level_count >= 2 and handle.level_downsamples[1] == 4
    coords = np.array([[0, 0], [512, 256]], dtype=np.int64)
    attrs = {"patch_size": 16, "patch_level": 1, "read_size": 32}
    write_h5(tmp_path / "p_coords.h5", {"coords": coords}, attrs)
    encoder = build_encoder(SPEC)
    out = tmp_path / "p.h5"
    extract_features(tmp_path / "p.svs", tmp_path / "p_coords.h5", out, encoder, 2, 0, 1)
    tile = np.asarray(handle.read_region((512, 256), 1, (32, 32)).convert("RGB"))
    handle.close()
    with torch.inference_mode():
        expected = encoder(encoder.transform(tile)[None])[0].numpy()
    np.testing.assert_allclose(read_feature_bag(out).features[1], expected, rtol=1e-5, atol=1e-6)


def corrupt_tiles(path: Path) -> None:
    """Zero the first half of a slide file past its header: it opens, its tiles do not decode."""
    data = bytearray(path.read_bytes())
    data[2000 : len(data) // 2] = bytes(len(data) // 2 - 2000)
    path.write_bytes(bytes(data))


def make_cohort(root: Path) -> tuple[Path, Path]:
    """Slides a (good), b (tiles do not decode), c (not a slide), d (no tissue), e (tiling
    failed), f (good), with the tiling stage's process list beside the patches folder; the list
    names slides by file name as the tiling stage does, except f (by stem)."""
    slides, patches = root / "slides", root / "tiles" / "patches"
    for index, name in enumerate("abcf"):
        make_tiled_slide(slides, patches, name, seed=index, count=12)
    make_tiled_slide(slides, patches, "d", count=0)
    corrupt_tiles(slides / "b.svs")
    (slides / "c.svs").write_bytes(b"not a slide at all" * 100)
    status = ["processed", "processed", "processed", "no_tissue", "failed", "processed"]
    names = ["a.svs", "b.svs", "c.svs", "d.svs", "e.svs", "f"]
    tiling = pd.DataFrame({"slide": names, "status": status, "n_patches": 0, "error": ""})
    write_csv(root / "tiles" / "process_list.csv", tiling)
    return slides, patches


def test_cohort_records_failures_and_goes_on(tmp_path):
    slides, patches = make_cohort(tmp_path)
    out = tmp_path / "features"
    frame = extract_cohort(slides, patches, out, SPEC, 8, 2, 2, show_progress=False)
    assert list(frame["slide"]) == ["a.svs", "b.svs", "c.svs", "d.svs", "e.svs", "f"]
    assert list(frame["status"]) == [
        "processed",
        "failed",
        "failed",
        "processed",
        "skipped",
        "processed",
    ]
    errors = dict(zip("abcdef", frame["error"], strict=True))
    assert errors["b"].startswith("TileReadError") and "b.svs: tile " in errors["b"]
    assert "fresh handle" in errors["b"] and "JPEG" in errors["b"]
    assert "c.svs: cannot open (OpenSlideUnsupportedFormatError" in errors["c"]
    assert errors["e"] == "tiling status 'failed'"
    assert errors["a"] == errors["d"] == errors["f"] == ""
    assert list(frame["n_tiles"].astype(object)) == [12, pd.NA, pd.NA, 0, pd.NA, 12]
    assert sorted(p.name for p in out.glob("*.h5")) == ["a.h5", "d.h5", "f.h5"]
    written = pd.read_csv(out / "process_list.csv", keep_default_na=False)
    assert list(written["status"]) == list(frame["status"])


def test_cohort_rerun_keeps_finished_slides(tmp_path):
    slides, patches = make_cohort(tmp_path)
    out = tmp_path / "features"
    extract_cohort(slides, patches, out, SPEC, 8, 0, 2, show_progress=False)
    listing = (out / "process_list.csv").read_bytes()
    (out / "f.h5").unlink()
    done = {name: (out / f"{name}.h5").stat().st_mtime_ns for name in "ad"}
    extract_cohort(slides, patches, out, SPEC, 8, 0, 2, show_progress=False)
    assert {name: (out / f"{name}.h5").stat().st_mtime_ns for name in "ad"} == done
    assert (out / "f.h5").is_file()
    assert (out / "process_list.csv").read_bytes() == listing
    other = {**SPEC, "seed": 1}
    extract_cohort(slides, patches, out, other, 8, 0, 2, show_progress=False)
    assert read_feature_bag(out / "a.h5").attrs["encoder_seed"] == 1
    make_tiled_slide(slides, patches, "a", count=5)
    frame = extract_cohort(slides, patches, out, other, 8, 0, 2, show_progress=False)
    assert frame["n_tiles"][0] == 5 and len(read_feature_bag(out / "a.h5").features) == 5


def test_cohort_needs_the_tiling_process_list(tmp_path):
    (tmp_path / "patches").mkdir()
    with pytest.raises(FileNotFoundError, match="process_list.csv"):
        extract_cohort(tmp_path, tmp_path / "patches", tmp_path / "out", SPEC, 8, 0, 1)
