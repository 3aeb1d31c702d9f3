"""The patch grid: sizes at level 0 from the exact MPP, and which grid cells hold tissue.

A patch of `patch_size` pixels at `target_mpp` covers `round(patch_size * target_mpp / mpp)`
level-0 pixels (`patch_size_level0`); the overlap is converted the same way. The grid is global:
anchored at level-0 (0, 0) with step `patch_size_level0 - overlap_level0`, so a patch's
position never depends on the mask, and only patches lying wholly inside the slide are laid.
A patch's tissue fraction is the exact area of mask it covers (a piecewise-constant mask
integrated with bilinear interpolation of its integral image), so no rounding to mask pixels
shifts a patch in or out. Coordinates are level-0 (x, y), int64, sorted by (y, x).
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from reprolab.core.arguments import positive_number


@dataclass(frozen=True)
class PatchGeometry:
    """Patch and step sizes at the target resolution and at level 0."""

    patch_size: int
    overlap: int
    target_mpp: float
    mpp: float
    patch_size_level0: int
    overlap_level0: int

    @property
    def step_level0(self) -> int:
        """Distance between neighbouring patches in level-0 pixels."""
        return self.patch_size_level0 - self.overlap_level0


def check_patch_options(patch_size: int, overlap: int, target_mpp: float) -> None:
    """Raise ValueError, naming the option, unless patch size, overlap and MPP are usable."""
    if patch_size < 1:
        raise ValueError(f"--patch-size must be a positive integer, got {patch_size}")
    if overlap < 0:
        raise ValueError(f"--overlap must be >= 0, got {overlap}")
    if overlap >= patch_size:
        raise ValueError(
            f"--overlap ({overlap}) must be smaller than --patch-size ({patch_size}): "
            "the grid step is patch size minus overlap"
        )
    positive_number("--target-mpp", target_mpp)


def patch_geometry(patch_size: int, overlap: int, target_mpp: float, mpp: float) -> PatchGeometry:
    """Level-0 patch and overlap sizes for a slide of `mpp` µm/px."""
    check_patch_options(patch_size, overlap, target_mpp)
    scale = target_mpp / mpp
    size0 = max(1, round(patch_size * scale))
    overlap0 = min(round(overlap * scale), size0 - 1)
    return PatchGeometry(patch_size, overlap, target_mpp, mpp, size0, overlap0)


def grid_coords(width: int, height: int, geometry: PatchGeometry) -> np.ndarray:
    """Every level-0 (x, y) of the global grid whose patch lies inside a width x height slide."""
    size, step = geometry.patch_size_level0, geometry.step_level0
    xs = np.arange(0, width - size + 1, step, dtype=np.int64)
    ys = np.arange(0, height - size + 1, step, dtype=np.int64)
    grid_y, grid_x = np.meshgrid(ys, xs, indexing="ij")
    return np.stack([grid_x.ravel(), grid_y.ravel()], axis=1)


def _area_under(integral: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Mask area in [0, x) x [0, y) (fractional mask pixels), from the integral image."""
    height, width = integral.shape[0] - 1, integral.shape[1] - 1
    x = np.clip(x, 0, width)
    y = np.clip(y, 0, height)
    x0 = np.minimum(np.floor(x).astype(np.int64), width - 1)
    y0 = np.minimum(np.floor(y).astype(np.int64), height - 1)
    fx, fy = x - x0, y - y0
    top = integral[y0, x0] * (1 - fx) + integral[y0, x0 + 1] * fx
    bottom = integral[y0 + 1, x0] * (1 - fx) + integral[y0 + 1, x0 + 1] * fx
    return top * (1 - fy) + bottom * fy


def tissue_fractions(
    coords: np.ndarray, size_level0: int, mask: np.ndarray, scale: tuple[float, float]
) -> np.ndarray:
    """Fraction of each level-0 patch covered by `mask`; `scale` = level-0 px per mask px (x, y)."""
    if len(coords) == 0:
        return np.zeros(0)
    integral = cv2.integral(mask.astype(np.uint8), sdepth=cv2.CV_64F)
    x0 = coords[:, 0] / scale[0]
    y0 = coords[:, 1] / scale[1]
    x1 = (coords[:, 0] + size_level0) / scale[0]
    y1 = (coords[:, 1] + size_level0) / scale[1]
    area = (
        _area_under(integral, x1, y1)
        - _area_under(integral, x0, y1)
        - _area_under(integral, x1, y0)
        + _area_under(integral, x0, y0)
    )
    return np.clip(area / ((x1 - x0) * (y1 - y0)), 0.0, 1.0)


def sort_coords(coords: np.ndarray) -> np.ndarray:
    """Coordinates as an (N, 2) int64 array sorted by (y, x)."""
    coords = np.asarray(coords, dtype=np.int64).reshape(-1, 2)
    return coords[np.lexsort((coords[:, 0], coords[:, 1]))]


def tissue_grid(
    width: int,
    height: int,
    geometry: PatchGeometry,
    mask: np.ndarray,
    threshold: float,
) -> np.ndarray:
    """Grid patches whose tissue fraction is >= `threshold` (and > 0), sorted by (y, x)."""
    coords = grid_coords(width, height, geometry)
    scale = (width / mask.shape[1], height / mask.shape[0])
    fractions = tissue_fractions(coords, geometry.patch_size_level0, mask, scale)
    keep = (fractions >= threshold - 1e-9) & (fractions > 0)
    return sort_coords(coords[keep])
