"""Microns per pixel of a slide's level 0: where it comes from and whether to believe it.

Tiling at a physical resolution needs the exact MPP, and scanners get it wrong in known ways
(a 72-dpi default in the TIFF resolution tags reads as 352.78 µm/px; some files carry none).
The chain, first present wins:

1. a per-slide override from a CSV with columns `slide,mpp` (`slide` is the file name or its
   stem), which wins whenever the slide is listed;
2. `openslide.mpp-x` (OpenSlide's own value, from the vendor metadata or the TIFF tags);
3. `aperio.MPP` (the Aperio ImageDescription field);
4. `tiff.XResolution` with `tiff.ResolutionUnit` (centimeter or inch; no unit means none).

The first value found is checked against `MPP_RANGE` and never silently replaced by a later
source: an implausible or missing value raises `BadMppError`, whose message names the slide, the
value, its source and how to override it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

MPP_RANGE = (0.05, 20.0)
MICRONS_PER_UNIT = {"centimeter": 1e4, "inch": 25400.0}
OVERRIDE_HELP = (
    "give the right value in a CSV with columns slide,mpp (slide = file name or stem) "
    "and pass it as --mpp-override (TilingOptions.mpp_override)"
)


class BadMppError(ValueError):
    """A slide's MPP is missing or implausible; the message says how to override it."""


@dataclass(frozen=True)
class Mpp:
    """A level-0 MPP in µm/px and the property (or `override`) it was read from."""

    value: float
    source: str


def read_overrides(path: str | Path) -> dict[str, float]:
    """Read an MPP override CSV (columns `slide,mpp`) into {slide: mpp}, naming any bad row."""
    path = Path(path)
    try:
        frame = pd.read_csv(path, dtype={"slide": str})
    except (OSError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise ValueError(f"{path}: cannot read the MPP override CSV ({exc})") from exc
    missing = {"slide", "mpp"} - set(frame.columns)
    if missing:
        raise ValueError(
            f"{path}: MPP override CSV needs columns slide,mpp; missing {sorted(missing)} "
            f"(found {list(frame.columns)})"
        )
    overrides: dict[str, float] = {}
    for row, (slide, value) in enumerate(zip(frame["slide"], frame["mpp"], strict=True), 2):
        try:
            mpp = float(value)
        except (TypeError, ValueError):
            mpp = math.nan
        if not isinstance(slide, str) or not slide or not math.isfinite(mpp) or mpp <= 0:
            raise ValueError(
                f"{path}: line {row}: expected a slide name and a positive mpp, "
                f"got slide={slide!r} mpp={value!r}"
            )
        if slide in overrides:
            raise ValueError(f"{path}: line {row}: slide {slide!r} is listed twice")
        overrides[slide] = mpp
    return overrides


def override_for(overrides: Mapping[str, float], slide_file: str) -> float | None:
    """The override of a slide, looked up by file name and then by stem."""
    if slide_file in overrides:
        return overrides[slide_file]
    return overrides.get(Path(slide_file).stem)


def _positive(text: str | None) -> float | None:
    try:
        value = float(text) if text is not None else math.nan
    except ValueError:
        return None
    return value if math.isfinite(value) and value > 0 else None


def _from_resolution_tags(properties: Mapping[str, str]) -> float | None:
    per_unit = _positive(properties.get("tiff.XResolution"))
    unit = properties.get("tiff.ResolutionUnit", "").lower()
    if per_unit is None or unit not in MICRONS_PER_UNIT:
        return None
    return MICRONS_PER_UNIT[unit] / per_unit


def _describe_tags(properties: Mapping[str, str]) -> str:
    keys = ("tiff.XResolution", "tiff.ResolutionUnit", "aperio.MPP")
    found = [f"{key}={properties[key]}" for key in keys if key in properties]
    return f" ({', '.join(found)})" if found else ""


def resolve_mpp(
    properties: Mapping[str, str], slide_file: str, override: float | None = None
) -> Mpp:
    """The level-0 MPP of a slide from its OpenSlide properties, or `BadMppError`."""
    candidates = (
        ("override", override),
        ("openslide.mpp-x", _positive(properties.get("openslide.mpp-x"))),
        ("aperio.MPP", _positive(properties.get("aperio.MPP"))),
        ("tiff.XResolution", _from_resolution_tags(properties)),
    )
    for source, value in candidates:
        if value is None:
            continue
        low, high = MPP_RANGE
        if not low <= value <= high:
            raise BadMppError(
                f"{slide_file}: mpp {value:.6g} µm/px from {source}{_describe_tags(properties)} "
                f"is outside the plausible range {low}-{high} µm/px (a 72-dpi default in the "
                f"TIFF tags reads as 352.78); {OVERRIDE_HELP}"
            )
        return Mpp(value, source)
    raise BadMppError(
        f"{slide_file}: no mpp found (none of openslide.mpp-x, aperio.MPP, "
        f"tiff.XResolution+tiff.ResolutionUnit){_describe_tags(properties)}; {OVERRIDE_HELP}"
    )
