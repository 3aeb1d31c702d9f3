"""The tile reader: pixels, level choice and resizing, the handle cache, one retry."""

from __future__ import annotations

import ctypes

import numpy as np
import openslide
import pytest

from reprolab.preprocess.wsi.reader import (
    SlideCache,
    TileReadError,
    best_level,
    read_patch,
    read_plan,
    read_rgba,
    read_tile,
    slide_cache,
)
from tests.preprocess.wsi.conftest import tissue_image, zero_tile

IMAGE = tissue_image(2048)


def test_read_tile_gives_the_written_pixels(make_slide):
    path = make_slide("a.svs", IMAGE, level_factor=2, min_level_size=256)
    tile = read_tile(path, 512, 256, 0, 256)
    assert tile.shape == (256, 256, 3) and tile.dtype == np.uint8
    error = np.abs(tile.astype(int) - IMAGE[256:512, 512:768].astype(int)).mean()
    assert error < 3
    assert read_tile(path, 512, 256, 0, 256, out_size=64).shape == (64, 64, 3)


def test_level_choice_and_resize(make_slide):
    assert best_level((1.0, 4.0, 16.0), 2.0) == 0
    assert best_level((1.0, 4.0001, 16.0), 4.0) == 1
    assert best_level((1.0, 4.0, 16.0), 100.0) == 2
    assert best_level((2.0,), 1.0) == 0
    assert read_plan((1.0, 4.0, 16.0), 512, 256) == (0, 512)
    assert read_plan((1.0, 2.0), 512, 256) == (1, 256)
    path = make_slide("b.svs", IMAGE, level_factor=2, min_level_size=256)
    patch = read_patch(path, 256, 256, 512, 256)  # level 1 (downsample 2), no resize
    reference = read_tile(path, 256, 256, 1, 256)
    np.testing.assert_array_equal(patch, reference)
    assert read_patch(path, 256, 256, 300, 256).shape == (256, 256, 3)


def test_outside_the_slide_is_white(make_slide):
    path = make_slide("c.svs", IMAGE, min_level_size=256)
    with openslide.OpenSlide(path) as slide:
        width, height = slide.dimensions
    tile = read_tile(path, width - 64, height - 64, 0, 128)
    assert (tile[80:, 80:] == 255).all()


def test_corrupt_tile_raises_named_error_and_handle_recovers(make_slide):
    path = make_slide("bad.svs", IMAGE, min_level_size=256)
    zero_tile(path, 512, 512)
    with pytest.raises(TileReadError, match=r"bad.svs: cannot read tile x=512 y=512.*fresh handle"):
        read_tile(path, 512, 512, 0, 256)
    assert read_tile(path, 0, 0, 0, 256).shape == (256, 256, 3)
    slide_cache().drop(path)


def test_cache_keeps_at_most_max_open(make_slide):
    paths = [make_slide(f"s{i}.svs", IMAGE[:512, :512], min_level_size=256) for i in range(3)]
    cache = SlideCache(max_open=2)
    first = cache.get(paths[0])
    assert cache.get(paths[0]) is first
    cache.get(paths[1])
    cache.get(paths[2])
    with pytest.raises(ctypes.ArgumentError):
        _ = first.level_count  # closed when the third was opened
    assert cache.reopen(paths[2]) is not None
    cache.close()


def test_read_rgba_gives_the_bytes_of_openslide_read_region(make_slide):
    """The numpy read (no PIL image) gives `np.asarray(OpenSlide.read_region(...))` byte for byte:
    opaque, transparent past the edge, and half-transparent edges at a non-integer downsample."""
    path = make_slide("e.svs", IMAGE, level_factor=3, min_level_size=256)
    alphas = set()
    with openslide.OpenSlide(path) as slide:
        for level, x, y, size in ((0, 300, 700, 256), (0, 1900, 1950, 256), (1, 1990, 13, 75)):
            expected = np.asarray(slide.read_region((x, y), level, (size, size)))
            got = read_rgba(path, x, y, level, size)
            assert got.shape == (size, size, 4) and got.dtype == np.uint8
            np.testing.assert_array_equal(got, expected)
            alphas.update(np.unique(got[..., 3]).tolist())
    assert {0, 255} < alphas  # opaque, transparent and half-transparent pixels all compared
    slide_cache().drop(path)
