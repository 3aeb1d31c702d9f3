"""The slide writer produces files that OpenSlide opens with the right vendor, levels and MPP."""

import numpy as np
import openslide
import pytest

from reprolab.preprocess.wsi.slide_writer import pyramid_levels, write_slide


def smooth_image(height: int, width: int, seed: int = 0) -> np.ndarray:
    """A smooth colour image (JPEG keeps it within a few grey levels)."""
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    channels = []
    for _ in range(3):
        fx, fy, phase = rng.uniform(0.002, 0.01), rng.uniform(0.002, 0.01), rng.uniform(0, 6)
        channels.append(150 + 80 * np.sin(fx * xx + phase) * np.cos(fy * yy))
    return np.clip(np.stack(channels, axis=-1), 0, 255).astype(np.uint8)


@pytest.fixture(scope="module")
def image() -> np.ndarray:
    return smooth_image(1200, 2100)


@pytest.mark.parametrize(("fmt", "vendor"), [("svs", "aperio"), ("tiff", "generic-tiff")])
def test_openslide_reads_vendor_levels_and_mpp(tmp_path, image, fmt, vendor):
    path = write_slide(tmp_path / f"s.{fmt}", image, 0.5, fmt, min_level_size=256)
    with openslide.OpenSlide(path) as slide:
        assert slide.properties[openslide.PROPERTY_NAME_VENDOR] == vendor
        expected = [level.shape[1::-1] for level in pyramid_levels(image, 4, 256)]
        assert slide.level_count == len(expected) == 2
        assert list(slide.level_dimensions) == expected
        assert float(slide.properties[openslide.PROPERTY_NAME_MPP_X]) == pytest.approx(0.5)
        assert float(slide.properties[openslide.PROPERTY_NAME_MPP_Y]) == pytest.approx(0.5)
        assert slide.level_downsamples[1] == pytest.approx(2100 / 525)


def test_svs_mpp_comes_from_aperio_description_and_tiff_from_resolution(tmp_path, image):
    svs = write_slide(tmp_path / "a.svs", image, 0.25, "svs")
    tiff = write_slide(tmp_path / "a.tiff", image, 0.25, "tiff")
    with openslide.OpenSlide(svs) as slide:
        assert float(slide.properties["aperio.MPP"]) == pytest.approx(0.25)
        assert float(slide.properties["aperio.AppMag"]) == pytest.approx(40)
    with openslide.OpenSlide(tiff) as slide:
        assert "aperio.MPP" not in slide.properties
        assert slide.properties["tiff.ResolutionUnit"] == "centimeter"
        assert float(slide.properties["tiff.XResolution"]) == pytest.approx(1e4 / 0.25)
        assert float(slide.properties[openslide.PROPERTY_NAME_MPP_X]) == pytest.approx(0.25)


@pytest.mark.parametrize("fmt", ["svs", "tiff"])
def test_level0_read_region_matches_source_up_to_jpeg_error(tmp_path, image, fmt):
    path = write_slide(tmp_path / f"r.{fmt}", image, 0.5, fmt)
    with openslide.OpenSlide(path) as slide:
        region = np.asarray(slide.read_region((300, 200), 0, (700, 500)).convert("RGB"))
    source = image[200:700, 300:1000].astype(np.int16)
    error = np.abs(region.astype(np.int16) - source)
    assert error.mean() < 2.0
    assert np.percentile(error, 99.9) < 12


def test_72_dpi_resolution_tag_is_reported_as_such(tmp_path, image):
    path = write_slide(
        tmp_path / "dpi.tiff", image, 0.5, "tiff", resolution_mpp=25400 / 72, resolution_unit="inch"
    )
    with openslide.OpenSlide(path) as slide:
        assert slide.properties["tiff.ResolutionUnit"] == "inch"
        assert float(slide.properties[openslide.PROPERTY_NAME_MPP_X]) == pytest.approx(352.78, 1e-4)


def test_bad_image_or_mpp_is_rejected(tmp_path, image):
    with pytest.raises(ValueError, match="uint8"):
        write_slide(tmp_path / "x.svs", image.astype(np.float32), 0.5)
    with pytest.raises(ValueError, match=r"\(H, W, 3\)"):
        write_slide(tmp_path / "x.svs", image[..., 0], 0.5)
    with pytest.raises(ValueError, match="mpp"):
        write_slide(tmp_path / "x.svs", image, 0.0)
    assert not (tmp_path / "x.svs").exists()
