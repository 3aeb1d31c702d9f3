"""The tile check: its decisions equal the reference rule's (the fast path on premultiplied
pixels included), and its pool handling (a broken pool is dropped once, never a working one)."""

from __future__ import annotations

import os
import signal
from concurrent.futures import wait
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import openslide

from reprolab.preprocess.wsi import synth, tile_check
from reprolab.preprocess.wsi.reader import argb_to_rgba, to_rgb
from reprolab.preprocess.wsi.tile_check import TileChecker
from reprolab.preprocess.wsi.tissue import saturation
from tests.preprocess.wsi.conftest import tissue_image

ARGS = (20.0, 40.0, True)  # white saturation (0-255), black threshold, drop blank and black


def grid(step: int, repeat: int) -> np.ndarray:
    """Level-0 coordinates every `step` px over a 1024 px slide, `repeat` times over."""
    coords = [(x, y) for y in range(0, 1024, step) for x in range(0, 1024, step)]
    return np.array(coords * repeat, dtype=np.int64)


def keep(checks: list[tile_check.TileCheck]) -> np.ndarray:
    return np.concatenate([check.keep for check in checks])


def test_a_loss_on_a_replaced_pool_leaves_the_working_pool_alone(make_slide):
    """The race of the old `restart`: slide A's work sits on pool P when P's workers die; B is
    refused by P (now known broken); C goes to the fresh pool P2. Collecting A must not drop
    P2, which holds C's work; A and B rerun, and all three give the undisturbed checks."""
    path = make_slide("a.svs", tissue_image(1024))
    coords, long_coords = grid(64, 1), grid(64, 16)
    inline = TileChecker(1)
    expected = keep(inline.collect(inline.submit(path, coords, 0, 64, ARGS)))
    expected_long = np.tile(expected, 16)
    assert 0 < expected.sum() < len(expected)  # some tiles are kept, some dropped

    checker = TileChecker(2)
    checker.start()
    broken = tile_check._pool(2)
    broken.submit(int, 0).result()
    a = checker.submit(path, long_coords, 0, 64, ARGS)  # 64 chunks of 64 tiles: still running
    for process in list(broken._processes.values()):
        os.kill(process.pid, signal.SIGKILL)
    wait(a.futures, timeout=60)  # the pool now knows it is broken
    assert all(future.exception() is not None for future in a.futures[-4:])
    b = checker.submit(path, coords, 0, 64, ARGS)
    assert b.futures is None and 2 not in tile_check._POOLS  # refused, and P dropped at once
    c = checker.submit(path, coords, 0, 64, ARGS)
    working = tile_check._POOLS[2]
    assert c.executor is working is not broken

    np.testing.assert_array_equal(keep(checker.collect(a)), expected_long)
    assert tile_check._POOLS[2] is working  # A's loss did not drop the pool holding C's work
    np.testing.assert_array_equal(keep(checker.collect(b)), expected)
    np.testing.assert_array_equal(keep(checker.collect(c)), expected)
    assert tile_check._POOLS[2] is working


def reference_figures(rgba: np.ndarray) -> tuple[float, float]:
    """(mean saturation, largest channel mean) of every CHECK_STRIDE-th pixel composited onto
    white: the figures the check compared with its thresholds before the fast path."""
    sample = (max(1, rgba.shape[0] // tile_check.CHECK_STRIDE),) * 2
    pixels = to_rgb(cv2.resize(rgba, sample, interpolation=cv2.INTER_NEAREST))
    return cv2.mean(saturation(pixels))[0], max(cv2.mean(pixels)[:3])


def todays_rule(rgba: np.ndarray, white_saturation: float, black_threshold: float) -> bool:
    """The check as it was before the fast path, frozen here as the reference: drop blank tiles
    (mean saturation <= white_saturation), then black ones (every channel mean < threshold)."""
    mean_saturation, darkest = reference_figures(rgba)
    if mean_saturation <= white_saturation:
        return False
    return not darkest < black_threshold


def thresholds(figures: list[tuple[float, float]], picks: int = 3) -> list[tuple[float, float]]:
    """Threshold pairs that hit `picks` of the tiles' own figures exactly (the `<=` and `<` ties)
    and fall just below them, besides the usual pair and the extremes."""
    saturations = sorted({f[0] for f in figures})
    darkest = sorted({f[1] for f in figures})
    pairs = [(10.0, 40.0), (0.0, 0.0), (float("inf"), 40.0)]
    for k in range(picks):
        white = saturations[len(saturations) * k // picks]
        black = darkest[len(darkest) * k // picks]
        pairs += [(white, 40.0), (np.nextafter(white, -1), 40.0)]
        pairs += [(-1.0, black), (-1.0, np.nextafter(black, 300))]
    return pairs


def test_opaque_rule_equals_the_reference_on_random_pixels():
    """The premultiplied fast path and its fallback give today's decision, ties included, on
    random tiles: opaque ones (fast path), and premultiplied ARGB with transparent and
    half-transparent pixels (the fallback), at even and odd sizes."""
    rng = np.random.default_rng(0)
    opaque_tiles = transparent_tiles = 0
    for size in (1, 3, 64, 75, 256, 257):
        for spread in (2, 30, 255):
            base = rng.integers(0, 256, 3)
            for alpha_kind in ("opaque", "some transparent", "some partial"):
                colour = np.clip(base + rng.integers(-spread, spread + 1, (size, size, 3)), 0, 255)
                alpha = np.full((size, size), 255)
                mask = rng.random((size, size)) < 0.2
                if alpha_kind == "some transparent":
                    alpha[mask] = 0
                elif alpha_kind == "some partial":
                    alpha[mask] = rng.integers(1, 255, mask.sum())
                premultiplied = (colour * alpha[..., None] + 127) // 255
                argb = alpha << 24 | premultiplied[..., 0] << 16 | premultiplied[..., 1] << 8
                argb = (argb | premultiplied[..., 2]).astype(np.uint32)
                rgba = argb_to_rgba(argb.copy())
                sample = (max(1, size // tile_check.CHECK_STRIDE),) * 2
                opaque = cv2.resize(rgba, sample, interpolation=cv2.INTER_NEAREST)[..., 3].min()
                opaque_tiles += opaque == 255
                transparent_tiles += opaque < 255
                for white, black in thresholds([reference_figures(rgba)]):
                    expected = todays_rule(rgba, white, black)
                    assert tile_check.keep_tile(argb.copy(), white, black) == expected
    assert opaque_tiles and transparent_tiles  # both paths were taken


def check_slide(path: Path, coords: np.ndarray, level: int, size: int) -> list[Any]:
    """Compare `check_tiles` with `todays_rule` on `np.asarray(read_region)` for every tile of
    `coords` and threshold pairs hitting the tiles' own figures; returns each tile's
    (mean saturation, largest channel mean, opaque) for the caller to see what was covered."""
    with openslide.OpenSlide(path) as slide:
        tiles = [
            np.asarray(slide.read_region((int(x), int(y)), level, (size, size))) for x, y in coords
        ]
    figures = [reference_figures(tile) for tile in tiles]
    for white, black in thresholds(figures, picks=2):
        expected = np.array([todays_rule(tile, white, black) for tile in tiles])
        got = tile_check.check_tiles(str(path), coords, level, size, white, black, True)
        assert got.failures == ()
        np.testing.assert_array_equal(got.keep, expected, err_msg=f"thresholds {white}, {black}")
    return [(*f, tile[..., 3].min() == 255) for f, tile in zip(figures, tiles, strict=True)]


def test_fast_check_keeps_the_tiles_the_reference_keeps(make_slide):
    """On a slide with strong and faint tissue, blank glass, a black and a near-black region,
    read at level 0 (tiles past the edge are partly transparent) and at a level whose
    downsample is not an integer (half-transparent edges), at even and odd sizes."""
    image = tissue_image(2048, faint=True)
    image[1700:2000, 1100:1500] = (12, 10, 14)  # black: dropped at black_threshold 40
    image[1700:2000, 1600:1900] = (44, 38, 41)  # near-black: kept at 40
    path = make_slide("faint.svs", image, level_factor=3, min_level_size=256)
    with openslide.OpenSlide(path) as slide:
        assert slide.level_count == 2 and slide.level_downsamples[1] % 1
    steps = np.arange(0, 2048, 160)
    coords = np.array([(x, y) for y in steps for x in steps], dtype=np.int64)
    tiles = []
    for level, size in ((0, 256), (0, 75), (1, 85)):
        tiles += check_slide(path, coords, level, size)
    blank = [sat <= 10 for sat, _, _ in tiles]
    black = [sat > 10 and darkest < 40 for sat, darkest, _ in tiles]
    assert any(blank) and any(black) and not all(np.logical_or(blank, black))
    assert not all(opaque for _, _, opaque in tiles)  # the fallback was taken too


def test_fast_check_keeps_the_tiles_the_reference_keeps_on_a_synthetic_slide(tmp_path):
    """The same on a synthetic H&E slide (`synth`): sections, faint tissue, folds, glass."""
    spec = synth.SlideSpec(name="s", width=2048, height=2048, faint_fraction=0.5, seed=3)
    path = tmp_path / "s.svs"
    synth.write_synthetic_slide(spec, path, tmp_path / "s_truth.h5")
    steps = np.arange(0, 2048, 128)
    coords = np.array([(x, y) for y in steps for x in steps], dtype=np.int64)
    saturations = [sat for sat, _, _ in check_slide(path, coords, 0, 256)]
    assert min(saturations) <= 10 < max(saturations)  # glass and tissue at the usual threshold
