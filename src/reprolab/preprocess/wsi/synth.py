"""Synthetic H&E whole-slide images in which a MIL study succeeds only by finding sparse lesions.

A slide is laid out on a coarse grid of `MASK_DOWNSAMPLE` level-0 px per cell, then rendered
block by block at level 0 (textures in `synth_textures`) and written by `slide_writer`:

- Tissue: 2-4 warped elliptical sections plus small fragments, with holes (lumens and fat
  vacuoles); everything else is glass (light noise, illumination shading, dust specks).
- Regions (texture codes, `TEXTURE_NAMES`): 0 background, 1 normal tissue, 2-7 nuisances
  (three stroma variants, necrosis, blood, and `lymphoid`, the mimic: dense small dark nuclei
  whose colour statistics match the lesion's) and 8 the lesion (crowded large dark nuclei with
  nucleoli). Each region is grown as 1-4 compact foci around random tissue cells, its area set
  exactly by a quantile of a noisy distance score. The lesion is planted only in positive slides
  and covers `lesion_fraction` of the tissue area in 1-3 foci (fewer when small: a focus covers
  at least one 256-px tile's area where it can); nuisances appear in both classes.
- `nuisance="shared"`: every slide has every nuisance (codes 2-6) with the same colours.
  `nuisance="hetero"`: each slide draws which of them appear (each with probability 1/2, at
  least two) and shifts their H, E and R concentrations by up to ±25 % (not the mimic's, which
  stays close to the lesion). With `nuisance_count` = [lo, hi] (hetero only), the number of
  nuisances is drawn uniformly in lo..hi instead, so slides range from one or two tissue types
  to seven (normal, lo..hi nuisances, the mimic). The mimic appears
  in every slide when `mimic` is true, never otherwise. All slides get a small global stain jitter.
- Faint tissue: `faint_fraction` of the tissue (never the lesion) is stained at `FAINT_STAIN`
  of the normal concentrations. On a 16x thumbnail with a 7-px median blur its HSV saturation
  has a median of about 12-24 (0-255), glass about 3 and stained tissue 80-90, so a fixed CLAM
  threshold of 8 keeps it, one of 20 drops most of it, and Otsu on saturation (its threshold
  lands near 45, between the faint and the stained modes) drops it too. Otsu recovers faint
  tissue only where it is most of the slide (`faint_fraction` near 1: threshold about 7).
- Artefacts (none of them pen marks): 0-2 tissue folds (a doubled, darker band), at most one
  air-bubble outline, dust specks on glass and tissue.

Ground truth (`SlideTruth`, HDF5 through `write_h5`): `labels` (texture code per cell, uint8)
and `faint` (uint8 0/1 per cell) on the mask grid, with attrs label, lesion_fraction (measured
on the grid, of tissue cells), faint_fraction, mpp, mask_downsample, width, height,
texture_names, nuisances and the spec as JSON. `tile_truth` turns it into per-tile targets.

Cohort parameters (`cohort_specs(params, seed)`; every key is required):

- `n_slides` (int >= 1): slides in the cohort, named `slide_000`, `slide_001`, ...
- `positive_fraction` (0..1): round(n_slides * positive_fraction) slides get label 1 (which
  ones is drawn from the seed).
- `width`, `height` (int >= 256): level-0 size in px. `mpp` (> 0): µm per level-0 px.
- `formats` (non-empty list of "svs" / "tiff"): assigned to slides in turn.
- `lesion_fraction` ([min, max], 0 < min <= max < 1): a positive slide's lesion share of its
  tissue area, drawn log-uniformly.
- `nuisance` ("hetero" or "shared"), `mimic` (bool), `faint_fraction` (0 <= f <= 1).
- Optional: `nuisance_count` ([lo, hi], 0 <= lo <= hi <= 5; hetero only). Unset, it is left out
  of the truth file's spec, so cohorts written before it existed keep their bytes.

Every random choice of a slide comes from its `seed`, so a spec gives byte-identical files.
Rendering runs over `BLOCK`-px blocks, so memory is the image plus a few blocks (about 1.6 GB
for 20000 x 20000 px, of which 1.2 GB is the image itself).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from reprolab.core.determinism import derive_seed
from reprolab.core.io import canonical, read_h5, write_csv, write_h5
from reprolab.core.progress import progress
from reprolab.preprocess.wsi.slide_writer import SLIDE_SUFFIX, write_slide
from reprolab.preprocess.wsi.synth_textures import (
    ATLAS_PERIOD,
    STAIN_VECTORS,
    TEXTURES,
    NucleiLayer,
    Points,
    atlas_window,
    atlases,
    density_to_rgb,
    render_layer,
    render_texture,
)

MASK_DOWNSAMPLE = 16
MIN_SIZE = 256
BLOCK = 512
MARGIN = 32
FAINT_STAIN = 0.12
TEXTURE_NAMES: tuple[str, ...] = ("background", *(t.name for t in TEXTURES))
CODE = {name: code for code, name in enumerate(TEXTURE_NAMES)}
LESION = CODE["lesion"]
MIMIC = CODE["lymphoid"]
NUISANCES = ("stroma_dense", "stroma_loose", "stroma_wavy", "necrosis", "blood")
# Share of the tissue each region takes when it appears (drawn uniformly in the range).
NUISANCE_AREA = {
    "stroma_dense": (0.08, 0.16),
    "stroma_loose": (0.06, 0.12),
    "stroma_wavy": (0.06, 0.12),
    "necrosis": (0.03, 0.08),
    "blood": (0.02, 0.05),
    "lymphoid": (0.02, 0.05),
}
# Later entries are painted over earlier ones; normal tissue is what is left.
PRIORITY = (
    "stroma_dense",
    "stroma_loose",
    "stroma_wavy",
    "necrosis",
    "blood",
    "lymphoid",
    "lesion",
)
RAMP_PX = 6.0
MIN_FOCUS_PX = 256 * 256  # a lesion focus covers at least one 256-px tile when it can
FOLD_EXTRA = np.float32(0.8)  # a fold doubles the section: 80 % more stain
GLASS_DENSITY = (0.030, 0.035, 0.042)  # a faint yellow cast, as scanned glass has
DUST = NucleiLayer(25.0, (1.2, 1.2), (2.0, 4.0), (0.0, 0.0, 0.0))  # density: per mm², see _dust


@dataclass(frozen=True)
class SlideSpec:
    """Everything that defines one synthetic slide (validated on construction)."""

    name: str
    width: int
    height: int
    mpp: float = 0.5
    fmt: str = "svs"
    label: int = 0
    lesion_fraction: float = 0.02
    nuisance: str = "hetero"
    mimic: bool = False
    faint_fraction: float = 0.15
    seed: int = 0
    nuisance_count: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        def bad(field: str, expected: str) -> ValueError:
            value = getattr(self, field)
            return ValueError(f"SlideSpec {self.name!r}: {field}={value!r}, expected {expected}")

        if not isinstance(self.name, str) or not re.fullmatch(
            r"[A-Za-z0-9][A-Za-z0-9._-]*", self.name
        ):
            raise bad("name", "letters, digits, '.', '_' or '-'")
        for field in ("width", "height"):
            value = getattr(self, field)
            if not isinstance(value, int) or isinstance(value, bool) or value < MIN_SIZE:
                raise bad(field, f"an int >= {MIN_SIZE} (one tile)")
        if not self.mpp > 0:
            raise bad("mpp", "a positive number")
        if self.fmt not in SLIDE_SUFFIX:
            raise bad("fmt", f"one of {sorted(SLIDE_SUFFIX)}")
        if self.label not in (0, 1) or isinstance(self.label, bool):
            raise bad("label", "0 or 1")
        if not 0 <= self.lesion_fraction < 1:
            raise bad("lesion_fraction", "a number in [0, 1)")
        if self.label == 1 and self.lesion_fraction <= 0:
            raise bad("lesion_fraction", "> 0 on a positive slide")
        if self.nuisance not in ("hetero", "shared"):
            raise bad("nuisance", "'hetero' or 'shared'")
        if not isinstance(self.mimic, bool):
            raise bad("mimic", "a bool")
        if not 0 <= self.faint_fraction <= 1:
            raise bad("faint_fraction", "a number in [0, 1]")
        if not isinstance(self.seed, int) or isinstance(self.seed, bool) or self.seed < 0:
            raise bad("seed", "an int >= 0")
        if self.nuisance_count is not None and not (
            self.nuisance == "hetero"
            and isinstance(self.nuisance_count, tuple)
            and len(self.nuisance_count) == 2
            and all(isinstance(v, int) and not isinstance(v, bool) for v in self.nuisance_count)
            and 0 <= self.nuisance_count[0] <= self.nuisance_count[1] <= len(NUISANCES)
        ):
            raise bad(
                "nuisance_count",
                f"(lo, hi) ints with 0 <= lo <= hi <= {len(NUISANCES)}, with nuisance='hetero'",
            )


@dataclass(frozen=True, eq=False)
class SlideTruth:
    """Ground truth of a synthetic slide on the mask grid (`mask_downsample` level-0 px a cell)."""

    name: str
    labels: np.ndarray
    faint: np.ndarray
    label: int
    lesion_fraction: float
    faint_fraction: float
    mpp: float
    mask_downsample: int
    width: int
    height: int
    texture_names: tuple[str, ...]
    nuisances: tuple[str, ...]


# ----------------------------------------------------------------------------------- layout


def _smooth_noise(rng: np.random.Generator, shape: tuple[int, int], sigma: float) -> np.ndarray:
    """Gaussian-filtered white noise with mean 0 and std 1 (sigma in cells)."""
    noise = rng.standard_normal(shape).astype(np.float32)
    field = cv2.GaussianBlur(noise, (0, 0), max(sigma, 0.5), borderType=cv2.BORDER_REFLECT)
    return (field - field.mean()) / max(float(field.std()), 1e-6)


def _grid(shape: tuple[int, int]) -> tuple[np.ndarray, np.ndarray]:
    """Cell-centre coordinates (x, y) in cells."""
    yy, xx = np.mgrid[0 : shape[0], 0 : shape[1]].astype(np.float32)
    return xx, yy


def _tissue_field(rng: np.random.Generator, shape: tuple[int, int], cell_um: float) -> np.ndarray:
    """Approximate signed distance (cells, > 0 inside) to the tissue edge, holes included."""
    hm, wm = shape
    xx, yy = _grid(shape)
    n_pieces = int(rng.integers(2, 5))
    # Sections sit in a grid of slots: side by side, stacked on a tall slide, 2 x 2 for four.
    rows = 2 if n_pieces == 4 or (n_pieces < 4 and hm > wm) else 1
    cols = math.ceil(n_pieces / rows)
    slots = [(r, c) for r in range(rows) for c in range(cols)][:n_pieces]
    low = _smooth_noise(rng, shape, 0.07 * min(shape))
    mid = _smooth_noise(rng, shape, 120.0 / cell_um)
    field = np.full(shape, -1e3, dtype=np.float32)
    for row, col in slots:
        slot_w, slot_h = wm / cols, hm / rows
        cx = (col + 0.5 + rng.uniform(-0.08, 0.08)) * slot_w
        cy = (row + 0.5 + rng.uniform(-0.08, 0.08)) * slot_h
        a = rng.uniform(0.36, 0.44) * slot_w
        b = rng.uniform(0.32, 0.42) * slot_h
        theta = rng.uniform(-0.35, 0.35)
        u = (xx - cx) * math.cos(theta) + (yy - cy) * math.sin(theta)
        v = -(xx - cx) * math.sin(theta) + (yy - cy) * math.cos(theta)
        radius = np.sqrt((u / a) ** 2 + (v / b) ** 2)
        field = np.maximum(field, (1.0 - radius) * min(a, b))
    for _ in range(int(rng.integers(1, 4))):
        cx, cy = rng.uniform(0.05, 0.95) * wm, rng.uniform(0.05, 0.95) * hm
        r = rng.uniform(0.025, 0.05) * min(shape)
        field = np.maximum(field, r - np.hypot(xx - cx, yy - cy))
    scale = 0.12 * min(shape)
    field = field + scale * (0.45 * low + 0.12 * mid)
    return np.minimum(field, _holes(rng, field > 0, cell_um))


def _holes(rng: np.random.Generator, inside: np.ndarray, cell_um: float) -> np.ndarray:
    """Signed distance (cells, < 0 inside a hole) to round lumens and fat vacuoles in tissue."""
    shape = inside.shape
    xx, yy = _grid(shape)
    cells = np.flatnonzero(inside)
    field = np.full(shape, 1e3, dtype=np.float32)
    if cells.size == 0:
        return field
    tissue_um2 = cells.size * cell_um**2
    count = int(rng.poisson(tissue_um2 / 60_000.0)) + 1
    for index in rng.choice(cells, size=min(count, cells.size), replace=False):
        cx, cy = index % shape[1] + 0.5, index // shape[1] + 0.5
        r = rng.uniform(10.0, 45.0) / cell_um
        aspect = rng.uniform(1.0, 1.8)
        theta = rng.uniform(0, math.pi)
        u = (xx - cx) * math.cos(theta) + (yy - cy) * math.sin(theta)
        v = -(xx - cx) * math.sin(theta) + (yy - cy) * math.cos(theta)
        field = np.minimum(field, np.hypot(u / aspect, v) - r)
    return field


def _grow(
    rng: np.random.Generator, allowed: np.ndarray, n_cells: int, n_foci: int, aspect: float
) -> np.ndarray:
    """Field (cells, >= 0 inside) of `n_foci` compact blobs covering `n_cells` allowed cells.

    The score of a cell is minus its (stretched) distance to the nearest focus centre over that
    focus's size, plus smooth noise; the threshold is the `n_cells`-th highest score among the
    allowed cells, so the region has exactly that many allowed cells. The field is defined
    everywhere (higher-priority regions are painted over it) so blends have no gaps.
    """
    shape = allowed.shape
    cells = np.flatnonzero(allowed)
    n_cells = int(min(max(n_cells, 1), cells.size))
    radius = math.sqrt(n_cells / (math.pi * n_foci))
    xx, yy = _grid(shape)
    score = np.full(shape, -1e6, dtype=np.float32)
    for index in rng.choice(cells, size=min(n_foci, cells.size), replace=False):
        cx, cy = index % shape[1] + 0.5, index // shape[1] + 0.5
        theta = rng.uniform(0, math.pi)
        size = rng.uniform(0.7, 1.3) * radius
        u = (xx - cx) * math.cos(theta) + (yy - cy) * math.sin(theta)
        v = -(xx - cx) * math.sin(theta) + (yy - cy) * math.cos(theta)
        distance = np.hypot(u / math.sqrt(aspect), v * math.sqrt(aspect))
        score = np.maximum(score, -distance / size)
    score = score + 0.3 * _smooth_noise(rng, shape, max(radius / 2, 1.0))
    values = score.ravel()[cells]
    threshold = np.partition(values, values.size - n_cells)[values.size - n_cells]
    return (score - threshold) * np.float32(radius)


@dataclass
class Layout:
    """A slide's layout on the mask grid: continuous fields and the discrete truth."""

    tissue: np.ndarray  # signed distance to the tissue edge (cells)
    regions: dict[int, np.ndarray]  # code -> field (>= 0 inside), painted in PRIORITY order
    faint: np.ndarray  # faint-stain weight 0..1 (smooth)
    folds: np.ndarray  # fold weight 0..1
    bubble: np.ndarray  # signed distance to an air-bubble outline (cells), large when none
    labels: np.ndarray
    faint_mask: np.ndarray
    gains: dict[int, np.ndarray]  # code -> (H, E, R) concentration multipliers


def _layout(spec: SlideSpec) -> Layout:
    """Draw tissue, regions, faint areas and artefacts of a slide from its seed."""
    ds = MASK_DOWNSAMPLE
    shape = (math.ceil(spec.height / ds), math.ceil(spec.width / ds))
    cell_um = ds * spec.mpp
    rng = np.random.default_rng(derive_seed(spec.seed, "layout"))
    tissue = _tissue_field(rng, shape, cell_um)
    inside = tissue > 0
    n_tissue = int(inside.sum())
    if n_tissue < 16:
        raise ValueError(f"SlideSpec {spec.name!r}: the slide is too small to hold tissue")
    present = _nuisances_present(spec, rng)
    regions: dict[int, np.ndarray] = {}
    labels = np.where(inside, CODE["normal"], CODE["background"]).astype(np.uint8)
    free = inside.copy()
    if spec.label == 1:
        n_cells = round(spec.lesion_fraction * n_tissue)
        n_foci = int(rng.integers(1, 4))
        n_foci = min(n_foci, max(1, n_cells * MASK_DOWNSAMPLE**2 // MIN_FOCUS_PX))
        field = _grow(rng, free, n_cells, n_foci, 1.3)
        regions[LESION] = field
        labels[free & (field >= 0)] = LESION
        free &= field < 0
    for name in reversed(PRIORITY[:-1]):
        if name not in present:
            continue
        low, high = NUISANCE_AREA[name]
        aspect = 2.5 if name.startswith("stroma") else 1.4
        n_foci = int(rng.integers(1, 5))
        field = _grow(rng, free, round(rng.uniform(low, high) * n_tissue), n_foci, aspect)
        regions[CODE[name]] = field
        labels[free & (field >= 0)] = CODE[name]
        free &= field < 0
    faint_noise = _smooth_noise(rng, shape, 0.12 * min(shape))
    faint_mask = np.zeros(shape, dtype=bool)
    faint = np.zeros(shape, dtype=np.float32)
    if spec.faint_fraction > 0:
        pool = inside & (labels != LESION)
        values = faint_noise[pool]
        n_faint = round(spec.faint_fraction * n_tissue)
        threshold = np.partition(values, values.size - n_faint)[values.size - n_faint]
        faint = np.clip(0.5 + (faint_noise - threshold) / 0.1, 0.0, 1.0)
        faint_mask = pool & (faint_noise >= threshold)
    folds, bubble = _artefacts(rng, inside, shape)
    return Layout(
        tissue, regions, faint, folds, bubble, labels, faint_mask, _gains(spec, rng, present)
    )


def _nuisances_present(spec: SlideSpec, rng: np.random.Generator) -> tuple[str, ...]:
    """The nuisance textures this slide shows (the mimic follows `spec.mimic`)."""
    if spec.nuisance == "shared":
        chosen = list(NUISANCES)
    elif spec.nuisance_count is not None:
        count = int(rng.integers(spec.nuisance_count[0], spec.nuisance_count[1] + 1))
        keep = set(rng.choice(len(NUISANCES), size=count, replace=False).tolist())
        chosen = [name for index, name in enumerate(NUISANCES) if index in keep]
    else:
        draws = rng.random(len(NUISANCES)) < 0.5
        while draws.sum() < 2:
            draws[rng.integers(len(NUISANCES))] = True
        chosen = [name for name, keep in zip(NUISANCES, draws, strict=True) if keep]
    return (*chosen, "lymphoid") if spec.mimic else tuple(chosen)


def _gains(
    spec: SlideSpec, rng: np.random.Generator, present: tuple[str, ...]
) -> dict[int, np.ndarray]:
    """Per-texture (H, E, R) multipliers: a slide-wide jitter, and per-nuisance shifts if hetero."""
    slide = rng.uniform(0.92, 1.08, size=3)
    gains = {code: slide.astype(np.float32) for code in range(1, len(TEXTURE_NAMES))}
    if spec.nuisance == "hetero":
        for name in present:
            if name != "lymphoid":
                gains[CODE[name]] = (slide * rng.uniform(0.75, 1.25, size=3)).astype(np.float32)
    return gains


def _artefacts(
    rng: np.random.Generator, inside: np.ndarray, shape: tuple[int, int]
) -> tuple[np.ndarray, np.ndarray]:
    """Tissue folds (weight 0..1) and an air-bubble outline (distance to the ring, cells)."""
    xx, yy = _grid(shape)
    folds = np.zeros(shape, dtype=np.float32)
    cells = np.flatnonzero(inside)
    for index in rng.choice(cells, size=int(rng.integers(0, 3)), replace=True):
        cx, cy = index % shape[1] + 0.5, index // shape[1] + 0.5
        theta = rng.uniform(0, math.pi)
        half = rng.uniform(0.08, 0.2) * min(shape)
        along = (xx - cx) * math.cos(theta) + (yy - cy) * math.sin(theta)
        across = -(xx - cx) * math.sin(theta) + (yy - cy) * math.cos(theta)
        across = across - 0.016 * min(shape) * np.sin(3.0 * along / max(half, 1.0))  # S-bend
        distance = np.hypot(np.clip(np.abs(along) - half, 0, None), across)
        width = rng.uniform(2.0, 6.0)
        folds = np.maximum(folds, np.clip(1.0 - distance / width, 0.0, 1.0))
    bubble = np.full(shape, 1e3, dtype=np.float32)
    if rng.random() < 0.5:
        cx, cy = rng.uniform(0.1, 0.9) * shape[1], rng.uniform(0.1, 0.9) * shape[0]
        radius = rng.uniform(0.05, 0.12) * min(shape)
        bubble = np.abs(np.hypot(xx - cx, yy - cy) - radius).astype(np.float32)
    return folds, bubble


# -------------------------------------------------------------------------------- rendering


def _sample_points(spec: SlideSpec, layout: Layout) -> dict[int, list[Points]]:
    """Nucleus centres of every layer of every texture present, drawn over its cells."""
    kernel = np.ones((3, 3), np.uint8)
    points: dict[int, list[Points]] = {}
    for code in range(1, len(TEXTURE_NAMES)):
        if code not in layout.regions and code != CODE["normal"]:
            continue
        mask = cv2.dilate((layout.labels == code).astype(np.uint8), kernel) > 0
        layers = []
        for index, layer in enumerate(TEXTURES[code - 1].layers):
            rng = np.random.default_rng(derive_seed(spec.seed, "nuclei", code, index))
            layers.append(_layer_points(rng, layer, mask, spec.mpp))
        points[code] = layers
    return points


def _layer_points(
    rng: np.random.Generator, layer: NucleiLayer, mask: np.ndarray, mpp: float
) -> Points:
    """Centres of one nuclei layer over the cells of `mask` (Poisson, or a jittered grid)."""
    ds = MASK_DOWNSAMPLE
    if not mask.any():
        empty = np.zeros(0, dtype=np.float32)
        return Points(empty, empty, empty)
    if layer.jitter is None:
        cells = np.flatnonzero(mask)
        counts = rng.poisson(layer.density * (ds * mpp) ** 2 / 1000.0, size=cells.size)
        where = np.repeat(cells, counts)
        x = ((where % mask.shape[1]) + rng.random(where.size)) * ds
        y = ((where // mask.shape[1]) + rng.random(where.size)) * ds
    else:
        spacing = math.sqrt(1000.0 / layer.density) / mpp
        ys, xs = np.nonzero(mask)
        lo_x, hi_x = xs.min() * ds, (xs.max() + 1) * ds
        lo_y, hi_y = ys.min() * ds, (ys.max() + 1) * ds
        gx = np.arange(lo_x + spacing / 2, hi_x, spacing)
        gy = np.arange(lo_y + spacing / 2, hi_y, spacing)
        x = np.tile(gx, gy.size)
        y = np.repeat(gy, gx.size)
        x = x + rng.uniform(-layer.jitter, layer.jitter, x.size) * spacing
        y = y + rng.uniform(-layer.jitter, layer.jitter, y.size) * spacing
        cx = np.clip((x // ds).astype(np.int64), 0, mask.shape[1] - 1)
        cy = np.clip((y // ds).astype(np.int64), 0, mask.shape[0] - 1)
        keep = mask[cy, cx] & (rng.random(x.size) >= 0.08)
        x, y = x[keep], y[keep]
    amp = rng.uniform(*layer.amplitude, size=x.size)
    order = np.argsort(y, kind="stable")
    return Points(
        x[order].astype(np.float32), y[order].astype(np.float32), amp[order].astype(np.float32)
    )


def _dust(spec: SlideSpec) -> Points:
    """Dust specks over the whole slide (about 25 per mm²)."""
    rng = np.random.default_rng(derive_seed(spec.seed, "dust"))
    area_mm2 = spec.width * spec.height * spec.mpp**2 / 1e6
    n = int(rng.poisson(DUST.density * area_mm2))
    x, y = rng.random(n) * spec.width, rng.random(n) * spec.height
    order = np.argsort(y, kind="stable")
    amp = rng.uniform(2.0, 4.0, size=n)
    return Points(
        x[order].astype(np.float32), y[order].astype(np.float32), amp[order].astype(np.float32)
    )


def _ramp(distance_cells: np.ndarray, ramp_px: float = RAMP_PX) -> np.ndarray:
    """Weight 0..1 from a signed distance in cells: 0.5 on the edge, `ramp_px` px wide."""
    scale = np.float32(MASK_DOWNSAMPLE / ramp_px)
    return np.clip(0.5 + distance_cells * scale, 0.0, 1.0)


class _Canvas:
    """Everything needed to render any level-0 block of a slide, seamlessly between blocks."""

    def __init__(self, spec: SlideSpec, layout: Layout) -> None:
        self.layout = layout
        self.points = _sample_points(spec, layout)
        self.dust = _dust(spec)
        self.px_um = 1.0 / spec.mpp
        self.bank = atlases(spec.mpp)
        rng = np.random.default_rng(derive_seed(spec.seed, "atlas"))
        self.offsets = {name: rng.integers(0, ATLAS_PERIOD, size=2) for name in sorted(self.bank)}
        self.stains = (STAIN_VECTORS * rng.uniform(0.95, 1.05, size=(3, 3))).astype(np.float32)
        # Fields padded by one edge cell, so every block's crop has a neighbour to interpolate to.
        self.fields = {
            "tissue": layout.tissue,
            "faint": layout.faint,
            "folds": layout.folds,
            "bubble": layout.bubble,
            **{f"region{code}": field for code, field in layout.regions.items()},
        }
        self.fields = {key: np.pad(value, 1, mode="edge") for key, value in self.fields.items()}
        self.labels = np.pad(layout.labels, 1)

    def up(self, key: str, box: tuple[int, int, int, int]) -> np.ndarray:
        """Bilinear upsampling of a mask-grid field to the level-0 block `box` (x, y, w, h)."""
        ds = MASK_DOWNSAMPLE
        x0, y0, width, height = box
        cx, cy = x0 // ds, y0 // ds
        ncx, ncy = math.ceil(width / ds), math.ceil(height / ds)
        crop = np.ascontiguousarray(self.fields[key][cy : cy + ncy + 2, cx : cx + ncx + 2])
        big = cv2.resize(crop, ((ncx + 2) * ds, (ncy + 2) * ds), interpolation=cv2.INTER_LINEAR)
        return big[ds : ds + height, ds : ds + width]

    def window(self, name: str, box: tuple[int, int, int, int]) -> np.ndarray:
        """The atlas `name` over `box`, at this slide's offset."""
        ox, oy = self.offsets[name]
        return atlas_window(self.bank[name], box[0] + ox, box[1] + oy, box[2], box[3])

    def block(self, box: tuple[int, int, int, int]) -> np.ndarray:
        """The (3, h, w) optical density of a block: glass, tissue and dust."""
        ds = MASK_DOWNSAMPLE
        x0, y0, width, height = box
        near = self.labels[y0 // ds : (y0 + height) // ds + 3, x0 // ds : (x0 + width) // ds + 3]
        codes = {int(code) for code in np.unique(near)} - {0}
        density = self._glass(box)
        wide = (x0 - MARGIN, y0 - MARGIN, width + 2 * MARGIN, height + 2 * MARGIN)
        if codes:
            density += self._tissue(codes, box, wide)
        specks = self.dust.window(*wide)
        if specks.x.size:
            shape = (wide[3], wide[2])
            cover, _ = render_layer(DUST, specks, shape, self.px_um, np.zeros(shape, np.float32))
            density += np.float32(0.5) * cover[MARGIN:-MARGIN, MARGIN:-MARGIN][None]
        return density

    def _glass(self, box: tuple[int, int, int, int]) -> np.ndarray:
        """Optical density of the empty slide: tinted glass, grain, shading, a bubble outline."""
        glass = np.float32(0.006) * self.window("grain_fine", box)
        glass += np.float32(0.003) * self.window("shade", box)
        glass += np.float32(0.25) * _ramp(0.5 - self.up("bubble", box), 3.0)
        return np.stack([glass + np.float32(tint) for tint in GLASS_DENSITY])

    def _tissue(
        self, codes: set[int], box: tuple[int, int, int, int], wide: tuple[int, int, int, int]
    ) -> np.ndarray:
        """Optical density of the tissue in a block: textures blended by region weights."""
        height, width = box[3], box[2]
        windows = {name: self.window(name, wide) for name in self.bank}
        remaining = np.ones((height, width), dtype=np.float32)
        conc = np.zeros((3, height, width), dtype=np.float32)
        lesion = None
        for name in reversed(PRIORITY):
            code = CODE[name]
            if code not in codes or code not in self.layout.regions:
                continue
            weight = remaining * _ramp(self.up(f"region{code}", box))
            remaining -= weight
            conc += weight * self._texture(code, windows, wide)
            if code == LESION:
                lesion = weight
        if CODE["normal"] in codes:
            conc += remaining * self._texture(CODE["normal"], windows, wide)
        scale = 1.0 - np.float32(1.0 - FAINT_STAIN) * self.up("faint", box)
        if lesion is not None:
            scale += (1.0 - scale) * lesion
        scale *= _ramp(self.up("tissue", box)) * (1.0 + FOLD_EXTRA * self.up("folds", box))
        conc *= scale
        return np.einsum("chw,cd->dhw", conc, self.stains)

    def _texture(
        self, code: int, windows: dict[str, np.ndarray], wide: tuple[int, int, int, int]
    ) -> np.ndarray:
        """Concentrations of one texture over a block (margin cropped off)."""
        layer_points = [points.window(*wide) for points in self.points[code]]
        texture, gain = TEXTURES[code - 1], self.layout.gains[code]
        conc = render_texture(texture, gain, layer_points, windows, self.px_um)
        return conc[:, MARGIN:-MARGIN, MARGIN:-MARGIN]


def render_slide(spec: SlideSpec) -> tuple[np.ndarray, SlideTruth]:
    """Render the slide of `spec`: an (H, W, 3) uint8 RGB image and its ground truth."""
    layout = _layout(spec)
    canvas = _Canvas(spec, layout)
    image = np.empty((spec.height, spec.width, 3), dtype=np.uint8)
    for y0 in range(0, spec.height, BLOCK):
        for x0 in range(0, spec.width, BLOCK):
            box = (x0, y0, min(BLOCK, spec.width - x0), min(BLOCK, spec.height - y0))
            density_to_rgb(canvas.block(box), image[y0 : y0 + box[3], x0 : x0 + box[2]])
    return image, _truth(spec, layout)


# ------------------------------------------------------------------------------------ truth


def _truth(spec: SlideSpec, layout: Layout) -> SlideTruth:
    """The ground truth of a rendered layout."""
    tissue = int((layout.labels > 0).sum())
    lesion = int((layout.labels == LESION).sum())
    present = tuple(TEXTURE_NAMES[c] for c in sorted(layout.regions) if c != LESION)
    return SlideTruth(
        name=spec.name,
        labels=layout.labels,
        faint=layout.faint_mask,
        label=spec.label,
        lesion_fraction=lesion / tissue,
        faint_fraction=int(layout.faint_mask.sum()) / tissue,
        mpp=spec.mpp,
        mask_downsample=MASK_DOWNSAMPLE,
        width=spec.width,
        height=spec.height,
        texture_names=TEXTURE_NAMES,
        nuisances=present,
    )


def write_truth(path: str | Path, truth: SlideTruth, spec: SlideSpec) -> None:
    """Write `truth` (and the spec that made it) as HDF5."""
    attrs = {
        "name": truth.name,
        "label": truth.label,
        "lesion_fraction": truth.lesion_fraction,
        "faint_fraction": truth.faint_fraction,
        "mpp": truth.mpp,
        "mask_downsample": truth.mask_downsample,
        "width": truth.width,
        "height": truth.height,
        "texture_names": json.dumps(list(truth.texture_names)),
        "nuisances": json.dumps(list(truth.nuisances)),
        "spec": json.dumps(canonical(_set_fields(spec)), sort_keys=True),
    }
    arrays = {"labels": truth.labels, "faint": truth.faint.astype(np.uint8)}
    write_h5(path, arrays, attrs)


def _set_fields(spec: SlideSpec) -> dict[str, Any]:
    """The spec as a dict without its unset optional fields (`nuisance_count=None`)."""
    return {key: value for key, value in asdict(spec).items() if value is not None}


def read_truth(path: str | Path) -> SlideTruth:
    """Read a truth file written by `write_synthetic_slide`."""
    import h5py

    arrays = read_h5(path)
    with h5py.File(path, "r") as handle:
        attrs = dict(handle.attrs)
    missing = {"labels", "faint"} - set(arrays)
    if missing:
        raise ValueError(f"{path}: not a synthetic-slide truth file (missing {sorted(missing)})")
    return SlideTruth(
        name=str(attrs["name"]),
        labels=arrays["labels"],
        faint=arrays["faint"].astype(bool),
        label=int(attrs["label"]),
        lesion_fraction=float(attrs["lesion_fraction"]),
        faint_fraction=float(attrs["faint_fraction"]),
        mpp=float(attrs["mpp"]),
        mask_downsample=int(attrs["mask_downsample"]),
        width=int(attrs["width"]),
        height=int(attrs["height"]),
        texture_names=tuple(json.loads(attrs["texture_names"])),
        nuisances=tuple(json.loads(attrs["nuisances"])),
    )


def tile_truth(
    truth: SlideTruth, coords: np.ndarray, patch_size_level0: int
) -> dict[str, np.ndarray]:
    """Per-tile targets for tiles at `coords` ((N, 2) level-0 x, y of top-left corners).

    Returns area fractions of each tile (cells are weighted by their exact overlap with the
    tile; area outside the slide counts as background): `lesion_fraction`, `tissue_fraction`,
    `faint_fraction` (float64), and `dominant` (uint8), the tissue code covering most of the
    tile, or 0 when it has no tissue.
    """
    coords = np.asarray(coords)
    if coords.ndim != 2 or coords.shape[1] != 2:
        raise ValueError(f"coords: expected an (N, 2) array, got shape {coords.shape}")
    if patch_size_level0 <= 0:
        raise ValueError(f"patch_size_level0: expected > 0, got {patch_size_level0}")
    ds = truth.mask_downsample
    x0 = coords[:, 0].astype(np.float64) / ds
    y0 = coords[:, 1].astype(np.float64) / ds
    side = patch_size_level0 / ds
    area = side * side

    def box_sum(mask: np.ndarray) -> np.ndarray:
        integral = np.zeros((mask.shape[0] + 1, mask.shape[1] + 1), dtype=np.float64)
        integral[1:, 1:] = np.cumsum(np.cumsum(mask, axis=0, dtype=np.float64), axis=1)
        return (
            _bilinear(integral, x0 + side, y0 + side)
            - _bilinear(integral, x0, y0 + side)
            - _bilinear(integral, x0 + side, y0)
            + _bilinear(integral, x0, y0)
        )

    per_code = np.stack(
        [box_sum(truth.labels == code) for code in range(len(truth.texture_names))], axis=1
    )
    tissue = per_code[:, 1:].sum(axis=1)
    dominant = np.where(tissue > 0, per_code[:, 1:].argmax(axis=1) + 1, 0).astype(np.uint8)
    return {
        "lesion_fraction": per_code[:, truth.texture_names.index("lesion")] / area,
        "tissue_fraction": tissue / area,
        "faint_fraction": box_sum(truth.faint) / area,
        "dominant": dominant,
    }


def _bilinear(integral: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """The integral image at fractional cell coordinates (exact for a cell-wise constant mask)."""
    h, w = integral.shape[0] - 1, integral.shape[1] - 1
    x, y = np.clip(x, 0, w), np.clip(y, 0, h)
    ix, iy = (
        np.minimum(np.floor(x).astype(np.int64), w - 1),
        np.minimum(np.floor(y).astype(np.int64), h - 1),
    )
    fx, fy = x - ix, y - iy
    top = integral[iy, ix] * (1 - fx) + integral[iy, ix + 1] * fx
    bottom = integral[iy + 1, ix] * (1 - fx) + integral[iy + 1, ix + 1] * fx
    return top * (1 - fy) + bottom * fy


# ----------------------------------------------------------------------------------- cohort


def write_synthetic_slide(spec: SlideSpec, slide_path: str | Path, truth_path: str | Path) -> None:
    """Render `spec` and write its slide file (format `spec.fmt`) and its truth HDF5."""
    _write(spec, Path(slide_path), Path(truth_path))


def _write(spec: SlideSpec, slide_path: Path, truth_path: Path) -> SlideTruth:
    """Render and write one slide, returning its truth."""
    image, truth = render_slide(spec)
    write_slide(slide_path, image, spec.mpp, spec.fmt)
    del image
    write_truth(truth_path, truth, spec)
    return truth


COHORT_KEYS = (
    "n_slides",
    "positive_fraction",
    "width",
    "height",
    "mpp",
    "formats",
    "lesion_fraction",
    "nuisance",
    "mimic",
    "faint_fraction",
)
OPTIONAL_COHORT_KEYS = ("nuisance_count",)


def cohort_specs(params: Mapping[str, Any], seed: int) -> list[SlideSpec]:
    """The slide specs of a cohort described by `params` (keys in the module docstring)."""
    unknown = sorted(set(params) - set(COHORT_KEYS) - set(OPTIONAL_COHORT_KEYS))
    missing = [key for key in COHORT_KEYS if key not in params]
    if unknown or missing:
        raise ValueError(f"cohort params: unknown keys {unknown}, missing keys {missing}")
    n = params["n_slides"]
    if not isinstance(n, int) or isinstance(n, bool) or n < 1:
        raise ValueError(f"cohort params: n_slides={n!r}, expected an int >= 1")
    positive = params["positive_fraction"]
    if not 0 <= positive <= 1:
        raise ValueError(f"cohort params: positive_fraction={positive!r}, expected 0..1")
    formats = params["formats"]
    if not isinstance(formats, list | tuple) or not formats:
        raise ValueError(f"cohort params: formats={formats!r}, expected a non-empty list")
    bounds = params["lesion_fraction"]
    if (
        not isinstance(bounds, list | tuple)
        or len(bounds) != 2
        or not 0 < bounds[0] <= bounds[1] < 1
    ):
        raise ValueError(
            f"cohort params: lesion_fraction={bounds!r}, expected [min, max], 0 < min <= max < 1"
        )
    rng = np.random.default_rng(derive_seed(seed, "cohort"))
    labels = np.zeros(n, dtype=int)
    labels[rng.permutation(n)[: round(n * positive)]] = 1
    fractions = np.exp(rng.uniform(math.log(bounds[0]), math.log(bounds[1]), size=n))
    count = params.get("nuisance_count")
    if count is not None and (not isinstance(count, list | tuple) or len(count) != 2):
        raise ValueError(f"cohort params: nuisance_count={count!r}, expected [lo, hi]")
    specs = []
    for index in range(n):
        name = f"slide_{index:03d}"
        specs.append(
            SlideSpec(
                name=name,
                width=params["width"],
                height=params["height"],
                mpp=float(params["mpp"]),
                fmt=formats[index % len(formats)],
                label=int(labels[index]),
                lesion_fraction=float(fractions[index]) if labels[index] else 0.0,
                nuisance=params["nuisance"],
                mimic=params["mimic"],
                faint_fraction=float(params["faint_fraction"]),
                seed=derive_seed(seed, "slide", name),
                nuisance_count=None if count is None else (int(count[0]), int(count[1])),
            )
        )
    return specs


def write_cohort(
    specs: Iterable[SlideSpec], out_dir: str | Path, show_progress: bool = True
) -> Path:
    """Write every slide and truth of a cohort under `out_dir` and a manifest; return its path.

    Layout: `slides/<name>.svs|.tiff`, `truth/<name>.h5`, `manifest.csv` with one row per slide:
    slide, file, truth (paths relative to `out_dir`), label, lesion_fraction (measured),
    requested_lesion_fraction, faint_fraction (measured), fmt, width, height, mpp, nuisance,
    mimic, nuisances (those present, ';'-separated) and seed.
    """
    import pandas as pd

    out_dir = Path(out_dir)
    specs = list(specs)
    names = [spec.name for spec in specs]
    if len(set(names)) != len(names):
        raise ValueError(f"write_cohort: slide names are not unique: {names}")
    rows = []
    for spec in progress(specs, "synthetic slides", show_progress):
        file = Path("slides") / f"{spec.name}{SLIDE_SUFFIX[spec.fmt]}"
        truth_file = Path("truth") / f"{spec.name}.h5"
        truth = _write(spec, out_dir / file, out_dir / truth_file)
        rows.append(
            {
                "slide": spec.name,
                "file": file.as_posix(),
                "truth": truth_file.as_posix(),
                "label": spec.label,
                "lesion_fraction": round(truth.lesion_fraction, 6),
                "requested_lesion_fraction": spec.lesion_fraction,
                "faint_fraction": round(truth.faint_fraction, 6),
                "fmt": spec.fmt,
                "width": spec.width,
                "height": spec.height,
                "mpp": spec.mpp,
                "nuisance": spec.nuisance,
                "mimic": spec.mimic,
                "nuisances": ";".join(truth.nuisances),
                "seed": spec.seed,
            }
        )
    manifest = out_dir / "manifest.csv"
    write_csv(manifest, pd.DataFrame(rows))
    return manifest
