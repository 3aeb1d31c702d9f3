"""Write an RGB image as a pyramidal slide file that OpenSlide opens.

Two real formats are written with `tifffile` and JPEG tiles (through `imagecodecs`):

- `svs`: the Aperio layout. Page 0 is the tiled full-resolution level whose ImageDescription
  starts with "Aperio" and carries `AppMag` and `MPP`; page 1 is a small stripped thumbnail;
  pages 2.. are the lower tiled levels. OpenSlide reports it as vendor `aperio`.
- `tiff`: a generic tiled TIFF whose resolution tags (pixels per centimetre) give the MPP;
  OpenSlide reports it as vendor `generic-tiff`.

Each pyramid level is its own top-level page: OpenSlide does not see levels stored as SubIFDs.
Levels are made by area-averaging downsampling by `level_factor` until the longest side is
below `min_level_size`, so downsamples are generally not exact integers (OpenSlide reports them
from the level sizes).
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

import cv2
import numpy as np
import tifffile

from reprolab.core.io import atomic_path

SlideFormat = Literal["svs", "tiff"]
SLIDE_SUFFIX: dict[str, str] = {"svs": ".svs", "tiff": ".tiff"}


def pyramid_levels(
    image: np.ndarray, level_factor: int = 4, min_level_size: int = 1024
) -> list[np.ndarray]:
    """The image and its downsampled copies, largest first, each `level_factor` times smaller."""
    levels = [image]
    while max(levels[-1].shape[:2]) // level_factor >= min_level_size:
        height, width = levels[-1].shape[:2]
        size = (max(1, width // level_factor), max(1, height // level_factor))
        levels.append(cv2.resize(levels[-1], size, interpolation=cv2.INTER_AREA))
    return levels


def aperio_description(
    width: int, height: int, tile: int, mpp: float, magnification: float, quality: int
) -> str:
    """The ImageDescription of an Aperio level-0 page (the fields OpenSlide parses)."""
    return (
        f"Aperio Image Library v12.0.15 \r\n{width}x{height} [0,0 {width}x{height}] "
        f"({tile}x{tile}) JPEG/RGB Q={quality}|AppMag = {magnification:g}|MPP = {mpp:.6f}"
    )


def write_slide(
    path: str | Path,
    image: np.ndarray,
    mpp: float,
    fmt: SlideFormat = "svs",
    *,
    magnification: float | None = None,
    tile: int = 256,
    quality: int = 90,
    level_factor: int = 4,
    min_level_size: int = 1024,
    resolution_mpp: float | None = None,
    resolution_unit: Literal["centimeter", "inch"] = "centimeter",
) -> Path:
    """Write `image` (H, W, 3 uint8) as a pyramidal slide at `mpp` µm per level-0 pixel.

    `magnification` defaults to the usual objective for the MPP (10 / mpp, so 0.5 µm/px is 20x).
    `resolution_mpp` writes a different value into the TIFF resolution tags than `mpp` (for
    files with a bogus resolution, as scanners that leave a 72-dpi default produce); with
    `resolution_unit="inch"` the tag is in pixels per inch. The file is written atomically.
    """
    if image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
        raise ValueError(
            f"{path}: expected an (H, W, 3) uint8 image, got {image.shape} {image.dtype}"
        )
    if mpp <= 0:
        raise ValueError(f"{path}: mpp must be positive, got {mpp}")
    magnification = 10.0 / mpp if magnification is None else magnification
    tag_mpp = mpp if resolution_mpp is None else resolution_mpp
    per_unit = (1e4 if resolution_unit == "centimeter" else 25400.0) / tag_mpp
    levels = pyramid_levels(image, level_factor, min_level_size)
    jpeg = {"compression": "jpeg", "compressionargs": {"level": quality}, "photometric": "rgb"}
    path = Path(path)
    with atomic_path(path) as tmp, tifffile.TiffWriter(tmp, bigtiff=image.nbytes > 2**31) as tif:
        for index, level in enumerate(levels):
            height, width = level.shape[:2]
            scale = image.shape[1] / width
            if fmt == "svs":
                description = aperio_description(
                    width, height, tile, mpp * scale, magnification / scale, quality
                )
            else:
                description = f"reprolab synthetic slide {width}x{height}"
            tif.write(
                level,
                tile=(tile, tile),
                description=description,
                resolution=(per_unit / scale, per_unit / scale),
                resolutionunit=resolution_unit.upper(),
                subfiletype=0 if index == 0 else 1,
                metadata=None,
                **jpeg,
            )
            if fmt == "svs" and index == 0:
                tif.write(
                    _thumbnail(image, 768),
                    description=f"Aperio Image Library v12.0.15 \r\n{width}x{height} -> thumbnail",
                    rowsperstrip=16,
                    metadata=None,
                    **jpeg,
                )
    return path


def _thumbnail(image: np.ndarray, longest: int) -> np.ndarray:
    """A downsampled copy of `image` whose longest side is `longest` pixels."""
    height, width = image.shape[:2]
    factor = longest / max(height, width)
    size = (max(1, round(width * factor)), max(1, round(height * factor)))
    return cv2.resize(image, size, interpolation=cv2.INTER_AREA)
