"""The QC picture of a tiled slide: its thumbnail with the tissue mask and the kept grid.

Tissue contours are drawn in green, holes in blue and kept patches as red squares, on the
segmentation thumbnail, so a wrong threshold, a missed faint region or a shifted grid shows at a
glance. The PNG is encoded by OpenCV (no timestamps) and written atomically.
"""

from __future__ import annotations

from pathlib import Path

import cv2
import numpy as np

from reprolab.core.io import atomic_path
from reprolab.preprocess.wsi.tissue import TissueMask

TISSUE_BGR = (0, 170, 0)
HOLE_BGR = (255, 80, 0)
PATCH_BGR = (0, 0, 230)


def draw_qc(
    thumbnail: np.ndarray,
    tissue: TissueMask,
    coords: np.ndarray,
    size_level0: int,
    scale: tuple[float, float],
) -> np.ndarray:
    """A BGR image: `thumbnail` (RGB, mask resolution) with contours, holes and patches drawn."""
    canvas = cv2.cvtColor(np.ascontiguousarray(thumbnail), cv2.COLOR_RGB2BGR)
    cv2.drawContours(canvas, list(tissue.contours), -1, TISSUE_BGR, 2)
    cv2.drawContours(canvas, list(tissue.holes), -1, HOLE_BGR, 2)
    for x, y in coords:
        top_left = (int(x / scale[0]), int(y / scale[1]))
        bottom_right = (int((x + size_level0) / scale[0]), int((y + size_level0) / scale[1]))
        cv2.rectangle(canvas, top_left, bottom_right, PATCH_BGR, 1)
    return canvas


def write_png(path: str | Path, image: np.ndarray) -> None:
    """Write a BGR image as PNG, atomically."""
    ok, encoded = cv2.imencode(".png", image)
    if not ok:
        raise ValueError(f"{path}: cannot encode the QC image {image.shape}")
    with atomic_path(path) as tmp:
        tmp.write_bytes(encoded.tobytes())
