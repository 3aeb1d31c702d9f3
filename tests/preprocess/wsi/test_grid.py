"""The patch grid: level-0 sizes from the MPP, overlap checks, exact tissue fractions."""

from __future__ import annotations

import numpy as np
import pytest

from reprolab.preprocess.wsi.grid import (
    grid_coords,
    patch_geometry,
    sort_coords,
    tissue_fractions,
    tissue_grid,
)


def test_level0_sizes_from_exact_mpp():
    geometry = patch_geometry(256, 32, target_mpp=0.5, mpp=0.25)
    assert (geometry.patch_size_level0, geometry.overlap_level0, geometry.step_level0) == (
        512,
        64,
        448,
    )
    odd = patch_geometry(256, 0, target_mpp=0.5, mpp=0.2525)
    assert odd.patch_size_level0 == round(256 * 0.5 / 0.2525) == 507


@pytest.mark.parametrize(
    ("patch", "overlap", "message"),
    [
        (256, 256, "--overlap \\(256\\) must be smaller than --patch-size \\(256\\)"),
        (256, 300, "--overlap"),
        (256, -1, "--overlap must be >= 0"),
        (0, 0, "--patch-size"),
    ],
)
def test_bad_patch_options_name_the_option(patch, overlap, message):
    with pytest.raises(ValueError, match=message):
        patch_geometry(patch, overlap, 0.5, 0.5)


def test_grid_is_global_and_inside_the_slide():
    geometry = patch_geometry(256, 64, 0.5, 0.5)
    coords = grid_coords(1000, 700, geometry)
    assert coords.dtype == np.int64
    assert sorted(set(coords[:, 0])) == [0, 192, 384, 576]
    assert sorted(set(coords[:, 1])) == [0, 192, 384]
    assert (coords + 256 <= [1000, 700]).all()


def rectangle_mask(size0: int, scale: int, low: int, high: int) -> np.ndarray:
    """A mask (one pixel per `scale` level-0 px) whose tissue covers level-0 [low, high)^2."""
    mask = np.zeros((size0 // scale, size0 // scale), np.uint8)
    mask[low // scale : high // scale, low // scale : high // scale] = 1
    return mask


def test_tile_count_on_a_known_rectangle():
    geometry = patch_geometry(256, 0, 0.5, 0.5)
    aligned = tissue_grid(4096, 4096, geometry, rectangle_mask(4096, 8, 1024, 3072), 0.5)
    assert len(aligned) == 8 * 8
    assert aligned[0].tolist() == [1024, 1024] and aligned[-1].tolist() == [2816, 2816]
    # Tissue over [1000, 3000): the last column/row holds 184/256 = 0.72 tissue.
    shifted = rectangle_mask(4096, 8, 1000, 3000)
    assert len(tissue_grid(4096, 4096, geometry, shifted, 0.5)) == 8 * 8
    assert len(tissue_grid(4096, 4096, geometry, shifted, 0.8)) == 7 * 7
    assert len(tissue_grid(4096, 4096, geometry, shifted, 0.0)) == 9 * 9


def test_fractions_are_exact_at_fractional_scale():
    mask = np.zeros((10, 10), np.uint8)
    mask[:, :5] = 1  # left half of a 30 x 30 level-0 slide (3 px per mask px)
    coords = np.array([[0, 0], [12, 0], [15, 0], [13, 3]])
    fractions = tissue_fractions(coords, 6, mask, (3.0, 3.0))
    np.testing.assert_allclose(fractions, [1.0, 0.5, 0.0, 2 / 6])


def test_sorted_by_y_then_x():
    coords = sort_coords(np.array([[5, 1], [0, 2], [9, 0], [1, 1]]))
    assert coords.tolist() == [[9, 0], [1, 1], [5, 1], [0, 2]]
    assert sort_coords(np.zeros((0, 2))).shape == (0, 2)
