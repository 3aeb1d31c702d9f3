"""Tissue segmentation of a slide thumbnail, with sizes in microns.

The pipeline follows CLAM's: HSV saturation, median blur, threshold, morphological closing,
contours with holes (`cv2.RETR_CCOMP`), area filters. Two choices differ, because they are what
CLAM users trip over:

- The threshold is not a fixed `sthresh` (8 or 20), which finds nothing on faint, pale tissue.
  It is Otsu's threshold, searched again inside the lower class (and again) so a faint tissue
  mode next to the glass is split off too; a split is accepted only when its two classes are
  well separated (medians `min_separation` pooled robust spreads apart), so a tissue-free slide
  gives no tissue instead of thresholded noise. `min_saturation` is a floor under any threshold.
- Kernel sizes and area filters are in µm and µm² and converted with the thumbnail's own MPP,
  so the same parameters work at any scan resolution and any thumbnail level.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from reprolab.core.arguments import ArgumentError, finite_number, positive_number

SPREAD_FLOOR = 0.75
MAX_SPLITS = 4


@dataclass(frozen=True)
class TissueParams:
    """Segmentation parameters; sizes are physical (µm, µm²)."""

    median_um: float = 56.0
    close_um: float = 64.0
    min_tissue_area_um2: float = 20_000.0
    min_hole_area_um2: float = 10_000.0
    min_saturation: float = 3.0
    min_separation: float = 3.0

    def check(self) -> None:
        """Raise ArgumentError, naming the option, unless sizes are finite (areas may be 0, the
        filter sizes and separation must be positive) and the saturation floor is in [0, 255]."""
        positive_number("tissue.median_um", self.median_um)
        positive_number("tissue.close_um", self.close_um)
        finite_number("--min-tissue-area", self.min_tissue_area_um2, minimum=0)
        finite_number("--min-hole-area", self.min_hole_area_um2, minimum=0)
        if finite_number("tissue.min_saturation", self.min_saturation, minimum=0) > 255:
            raise ArgumentError(f"tissue.min_saturation must be <= 255, got {self.min_saturation}")
        positive_number("tissue.min_separation", self.min_separation)


@dataclass(frozen=True)
class TissueMask:
    """A binary mask (uint8 0/1) at `mpp` µm/px with the kept contours and holes (mask pixels)."""

    mask: np.ndarray
    mpp: float
    threshold: float
    contours: tuple[np.ndarray, ...]
    holes: tuple[np.ndarray, ...]

    @property
    def tissue_fraction(self) -> float:
        """Fraction of the thumbnail covered by tissue."""
        return float(self.mask.mean()) if self.mask.size else 0.0


def saturation(rgb: np.ndarray) -> np.ndarray:
    """The HSV saturation (0-255) of an RGB uint8 image."""
    return cv2.cvtColor(np.ascontiguousarray(rgb), cv2.COLOR_RGB2HSV)[:, :, 1]


def _odd_pixels(microns: float, mpp: float) -> int:
    size = max(1, round(microns / mpp))
    return size if size % 2 else size + 1


LEVELS = np.arange(256, dtype=np.float64)


def _otsu(hist: np.ndarray) -> int | None:
    """Otsu's threshold of a 256-bin histogram (low class: values <= it), None if one value."""
    weight = np.cumsum(hist)
    total = weight[-1]
    if np.count_nonzero(hist) < 2:
        return None
    mass = np.cumsum(hist * LEVELS)
    with np.errstate(divide="ignore", invalid="ignore"):
        between = (mass[-1] * weight - mass * total) ** 2 / (weight * (total - weight))
    return int(np.nanargmax(np.where(np.isfinite(between), between, np.nan)))


def _weighted_median(values: np.ndarray, weights: np.ndarray) -> float:
    order = np.argsort(values, kind="stable")
    cumulative = np.cumsum(weights[order])
    return float(values[order][np.searchsorted(cumulative, cumulative[-1] / 2.0)])


def _robust(hist: np.ndarray) -> tuple[float, float]:
    """Median and scaled median absolute deviation of a histogram (spread >= SPREAD_FLOOR)."""
    centre = _weighted_median(LEVELS, hist)
    spread = 1.4826 * _weighted_median(np.abs(LEVELS - centre), hist)
    return centre, max(spread, SPREAD_FLOOR)


def separation(low: np.ndarray, high: np.ndarray) -> float:
    """How far apart two classes (256-bin histograms) are, in pooled robust spreads.

    Medians and MADs, not means and variances, so the few blurred edge pixels between strong
    tissue and glass do not hide a faint tissue mode from the background.
    """
    (low_centre, low_spread), (high_centre, high_spread) = _robust(low), _robust(high)
    return (high_centre - low_centre) / np.sqrt((low_spread**2 + high_spread**2) / 2.0)


def choose_threshold(sat: np.ndarray, params: TissueParams) -> float:
    """The saturation threshold (tissue is > threshold); infinity when nothing stands out.

    Otsu's split of all pixels, then of the pixels below it, and so on (`MAX_SPLITS` times), so
    strong tissue | blurred edges | faint tissue | glass are peeled off in turn; a split counts
    only when its two classes are well separated, and the lowest split that counts wins. All on
    the 256-bin histogram, so the cost does not grow with the thumbnail.
    """
    chosen = float("inf")
    hist = np.bincount(sat.ravel(), minlength=256).astype(np.float64)
    for _ in range(MAX_SPLITS):
        split = _otsu(hist)
        if split is None:
            break
        low, high = hist.copy(), hist.copy()
        low[split + 1 :] = 0
        high[: split + 1] = 0
        if separation(low, high) >= params.min_separation:
            chosen = float(split)
        hist = low
    return max(chosen, params.min_saturation)


def segment_tissue(rgb: np.ndarray, mpp: float, params: TissueParams) -> TissueMask:
    """Segment tissue in an RGB thumbnail whose pixels are `mpp` µm wide."""
    sat = cv2.medianBlur(saturation(rgb), _odd_pixels(params.median_um, mpp))
    threshold = choose_threshold(sat, params)
    binary = (sat > threshold).astype(np.uint8)
    close = _odd_pixels(params.close_um, mpp)
    binary = cv2.morphologyEx(binary, cv2.MORPH_CLOSE, np.ones((close, close), np.uint8))
    found, hierarchy = cv2.findContours(binary, cv2.RETR_CCOMP, cv2.CHAIN_APPROX_NONE)
    pixel_area = mpp * mpp
    mask = np.zeros(binary.shape, np.uint8)
    contours: list[np.ndarray] = []
    holes: list[np.ndarray] = []
    for index, info in enumerate(hierarchy[0] if hierarchy is not None else ()):
        if info[3] != -1 or cv2.contourArea(found[index]) * pixel_area < params.min_tissue_area_um2:
            continue
        own_holes = []
        child = info[2]
        while child != -1:
            if cv2.contourArea(found[child]) * pixel_area >= params.min_hole_area_um2:
                own_holes.append(found[child])
            child = hierarchy[0][child][0]
        # Each piece is filled and cut separately, so tissue islands lying inside another
        # piece's hole (separate top-level contours under RETR_CCOMP) survive.
        piece = np.zeros_like(mask)
        cv2.drawContours(piece, [found[index]], -1, 1, thickness=cv2.FILLED)
        cv2.drawContours(piece, own_holes, -1, 0, thickness=cv2.FILLED)
        mask |= piece
        contours.append(found[index])
        holes.extend(own_holes)
    return TissueMask(mask, mpp, threshold, tuple(contours), tuple(holes))
