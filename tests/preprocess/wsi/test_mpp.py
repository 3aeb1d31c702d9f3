"""The MPP chain on real slide files and on property maps, and the override CSV."""

from __future__ import annotations

import openslide
import pytest

from reprolab.preprocess.wsi.mpp import BadMppError, override_for, read_overrides, resolve_mpp
from tests.preprocess.wsi.conftest import tissue_image

SMALL = tissue_image(512, strong=True)


def test_svs_gives_openslide_mpp(make_slide):
    path = make_slide("a.svs", SMALL, mpp=0.2525, min_level_size=128)
    with openslide.OpenSlide(path) as slide:
        mpp = resolve_mpp(slide.properties, path.name)
    assert mpp.source == "openslide.mpp-x"
    assert mpp.value == pytest.approx(0.2525)


def test_tiff_centimeter_tags_give_mpp(make_slide):
    path = make_slide("a.tiff", SMALL, mpp=0.5, min_level_size=128)
    with openslide.OpenSlide(path) as slide:
        assert resolve_mpp(slide.properties, path.name).value == pytest.approx(0.5)


def test_72_dpi_inch_tag_is_rejected_with_advice(make_slide):
    path = make_slide(
        "scan.tiff",
        SMALL,
        mpp=0.5,
        resolution_mpp=25400 / 72,
        resolution_unit="inch",
        min_level_size=128,
    )
    with openslide.OpenSlide(path) as slide, pytest.raises(BadMppError) as caught:
        resolve_mpp(slide.properties, path.name)
    message = str(caught.value)
    for needed in ("scan.tiff", "352.778", "tiff.XResolution", "slide,mpp", "--mpp-override"):
        assert needed in message


def test_chain_order_and_override_wins():
    props = {
        "openslide.mpp-x": "0.25",
        "aperio.MPP": "0.3",
        "tiff.XResolution": "20000",
        "tiff.ResolutionUnit": "centimeter",
    }
    assert resolve_mpp(props, "s.svs").source == "openslide.mpp-x"
    assert resolve_mpp(props, "s.svs", override=0.5).value == 0.5
    del props["openslide.mpp-x"]
    assert resolve_mpp(props, "s.svs").value == 0.3
    del props["aperio.MPP"]
    tags = resolve_mpp(props, "s.svs")
    assert (tags.value, tags.source) == (0.5, "tiff.XResolution")
    props["tiff.ResolutionUnit"] = "inch"
    assert resolve_mpp(props, "s.svs").value == pytest.approx(1.27)


def test_first_value_is_not_silently_replaced():
    props = {"openslide.mpp-x": "352.77", "aperio.MPP": "0.5"}
    with pytest.raises(BadMppError, match="openslide.mpp-x"):
        resolve_mpp(props, "s.svs")
    assert resolve_mpp(props, "s.svs", override=0.5).source == "override"


def test_missing_or_unusable_mpp():
    for props in (
        {},
        {"tiff.XResolution": "100", "tiff.ResolutionUnit": "none"},
        {"aperio.MPP": "0"},
    ):
        with pytest.raises(BadMppError, match="no mpp found.*slide,mpp"):
            resolve_mpp(props, "blank.svs")
    with pytest.raises(BadMppError, match="override"):
        resolve_mpp({"openslide.mpp-x": "0.5"}, "s.svs", override=100.0)


def test_override_csv(tmp_path):
    good = tmp_path / "mpp.csv"
    good.write_text("slide,mpp\nscan.tiff,0.5\nother,0.25\n")
    overrides = read_overrides(good)
    assert override_for(overrides, "scan.tiff") == 0.5
    assert override_for(overrides, "other.svs") == 0.25
    assert override_for(overrides, "absent.svs") is None
    cases = {
        "slide,micron\na,1\n": "missing \\['mpp'\\]",
        "slide,mpp\na,abc\n": "line 2",
        "slide,mpp\na,-1\n": "positive mpp",
        "slide,mpp\na,1\na,2\n": "listed twice",
    }
    for text, message in cases.items():
        bad = tmp_path / "bad.csv"
        bad.write_text(text)
        with pytest.raises(ValueError, match=message):
            read_overrides(bad)
    with pytest.raises(ValueError, match="cannot read"):
        read_overrides(tmp_path / "absent.csv")
