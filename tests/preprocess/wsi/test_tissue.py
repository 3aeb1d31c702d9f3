"""Tissue segmentation: faint tissue that CLAM's fixed threshold misses, holes, µm² areas."""

from __future__ import annotations

import cv2
import numpy as np
import openslide

from reprolab.preprocess.wsi.reader import to_rgb
from reprolab.preprocess.wsi.tissue import TissueParams, saturation, segment_tissue
from tests.preprocess.wsi.conftest import BACKGROUND, STRONG, faint_box, tissue_image


def thumbnail(path) -> tuple[np.ndarray, float]:
    """The lowest level of a slide and its µm/px (slides here are written at 0.5 µm/px)."""
    with openslide.OpenSlide(path) as slide:
        level = slide.level_count - 1
        pixels = to_rgb(np.asarray(slide.read_region((0, 0), level, slide.level_dimensions[level])))
        return pixels, 0.5 * slide.level_downsamples[level]


def clam_mask(rgb: np.ndarray, sthresh: int, mthresh: int = 7) -> np.ndarray:
    """CLAM's segmentTissue thresholding: median-blurred saturation > a fixed sthresh."""
    blurred = cv2.medianBlur(saturation(rgb), mthresh)
    return blurred > sthresh


def test_faint_tissue_found_where_clam_threshold_finds_none(make_slide):
    image = tissue_image(4096, strong=False, faint=True)
    rgb, mpp = thumbnail(make_slide("faint.svs", image))
    for sthresh in (8, 20):
        assert clam_mask(rgb, sthresh).sum() == 0
    tissue = segment_tissue(rgb, mpp, TissueParams())
    truth = np.zeros(image.shape[:2], np.uint8)
    x0, y0, x1, y1 = faint_box(4096)
    cv2.rectangle(truth, (x0, y0), (x1, y1), 1, -1)
    truth = cv2.resize(truth, rgb.shape[1::-1], interpolation=cv2.INTER_NEAREST)
    overlap = (tissue.mask & truth).sum() / (tissue.mask | truth).sum()
    assert overlap > 0.9
    assert len(tissue.contours) == 1


def test_strong_and_faint_tissue_both_found(make_slide):
    rgb, mpp = thumbnail(make_slide("both.svs", tissue_image(4096, strong=True, faint=True)))
    tissue = segment_tissue(rgb, mpp, TissueParams())
    assert len(tissue.contours) == 3
    x0, y0, x1, y1 = (v * rgb.shape[0] // 4096 for v in faint_box(4096))
    faint_centre = ((y0 + y1) // 2, (x0 + x1) // 2)
    assert tissue.mask[faint_centre] == 1
    assert tissue.mask[0, 0] == 0


def test_blank_slide_has_no_tissue(make_slide):
    rgb, mpp = thumbnail(make_slide("blank.svs", tissue_image(2048, strong=False)))
    tissue = segment_tissue(rgb, mpp, TissueParams())
    assert tissue.mask.sum() == 0
    assert tissue.contours == ()


def ring(size: int, hole: int) -> np.ndarray:
    image = np.empty((size, size, 3), np.uint8)
    image[:] = BACKGROUND
    cv2.circle(image, (size // 2, size // 2), size // 3, STRONG, -1)
    cv2.circle(image, (size // 2, size // 2), hole, BACKGROUND, -1)
    return image


def test_holes_above_min_area_are_cut_out():
    big = segment_tissue(ring(512, 60), 8.0, TissueParams())
    assert len(big.holes) == 1
    assert big.mask[256, 256] == 0 and big.mask[256, 256 + 120] == 1
    small = segment_tissue(ring(512, 60), 8.0, TissueParams(min_hole_area_um2=1e7))
    assert small.holes == () and small.mask[256, 256] == 1


def test_area_filters_are_physical():
    """A 100 µm speck is dropped and a 400 µm one kept, at 4 and at 8 µm/px alike."""
    params = TissueParams(min_tissue_area_um2=40_000.0)
    for mpp in (4.0, 8.0):
        size = round(4000 / mpp)
        image = np.empty((size, size, 3), np.uint8)
        image[:] = BACKGROUND
        for centre_um, side_um in ((1000, 100), (3000, 400)):
            low, high = (
                round((centre_um - side_um / 2) / mpp),
                round((centre_um + side_um / 2) / mpp),
            )
            image[low:high, low:high] = STRONG
        tissue = segment_tissue(image, mpp, params)
        assert len(tissue.contours) == 1
        assert tissue.mask[round(3000 / mpp), round(3000 / mpp)] == 1
        assert tissue.mask[round(1000 / mpp), round(1000 / mpp)] == 0
