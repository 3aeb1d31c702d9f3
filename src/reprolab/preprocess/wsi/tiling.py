"""Tile a folder of slides: tissue mask, patch grid, tile check, coords files and a process list.

`tile_slides(slides_dir, out_dir, options, workers)` is what `reprolab wsi tile` and the
workflow rule call. For each slide (files with a known slide suffix, sorted by name):

1. open it with OpenSlide (`failed_open` when it cannot be opened);
2. find its MPP (`mpp.resolve_mpp`, override CSV first; `bad_mpp` when missing/implausible);
3. segment tissue on the level closest to `seg_mpp` µm/px (`tissue.segment_tissue`);
4. lay the global grid at `target_mpp` and keep patches whose tissue fraction reaches
   `tissue_threshold` (`grid.tissue_grid`);
5. read every kept patch in worker processes (`tile_check`, through `reader`: handles cached
   per worker, one retry on a fresh handle): tiles that are blank (mean saturation not above
   the slide's own tissue threshold) or black are dropped; an unreadable tile makes the slide
   `failed_read`. A worker that dies breaks the pool: every slide it held is rerun, and only
   a slide whose worker dies on each rerun alone is `failed_read`;
6. write `qc/<stem>.png`, then `patches/<stem>.h5` (CLAM/TRIDENT layout, `coords_h5`); a slide
   with no patch left is `no_tissue` with an empty (0, 2) coords file.

Slides are pipelined: while workers read one slide's tiles the main process segments the next.
The coords file is a slide's completion record: deleted before anything of the slide is
written, written last, so a killed run never leaves one beside a missing or stale QC image. A
rerun skips a slide only when its coords file was made from it with the same options and its QC
image exists; any other slide is redone.
Whatever goes wrong with one slide is recorded in its row of `process_list.csv` (slide, status,
n_patches, mpp, mpp_source, error) and the batch goes on; the list is rewritten atomically after
every slide, so a killed batch loses nothing it finished.
"""

from __future__ import annotations

import json
import traceback
from collections import deque
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import cv2
import numpy as np
import openslide
import pandas as pd

from reprolab.core.arguments import (
    MAX_WORKERS,
    bounded_int,
    input_folder,
    output_folder,
    positive_number,
)
from reprolab.core.io import write_csv
from reprolab.core.progress import progress
from reprolab.preprocess.wsi.coords_h5 import read_coords, write_coords
from reprolab.preprocess.wsi.grid import (
    PatchGeometry,
    check_patch_options,
    patch_geometry,
    tissue_grid,
)
from reprolab.preprocess.wsi.mpp import BadMppError, Mpp, override_for, read_overrides, resolve_mpp
from reprolab.preprocess.wsi.qc import draw_qc, write_png
from reprolab.preprocess.wsi.reader import best_level, read_plan, to_rgb
from reprolab.preprocess.wsi.tile_check import CheckBatch, TileChecker, WorkerDiedError
from reprolab.preprocess.wsi.tissue import TissueMask, TissueParams, segment_tissue

SLIDE_SUFFIXES = frozenset(
    {".svs", ".tif", ".tiff", ".ndpi", ".vms", ".vmu", ".scn", ".mrxs", ".svslide", ".bif"}
)
STATUSES = ("processed", "no_tissue", "failed_open", "failed_read", "bad_mpp")
COLUMNS = ["slide", "status", "n_patches", "mpp", "mpp_source", "error"]


@dataclass(frozen=True)
class TilingOptions:
    """Everything that decides a slide's patches (the CLI flags and the params section)."""

    target_mpp: float = 0.5
    patch_size: int = 256
    overlap: int = 0
    tissue_threshold: float = 0.5
    seg_mpp: float = 8.0
    white_black: bool = True
    black_threshold: float = 40.0
    mpp_override: str | None = None
    tissue: TissueParams = field(default_factory=TissueParams)

    @classmethod
    def from_params(cls, values: Mapping[str, Any]) -> TilingOptions:
        """Options from the `wsi.tiling` params section (same names; `tissue` nested;
        an empty `mpp_override` means none)."""
        values = dict(values)
        tissue = TissueParams(**values.pop("tissue"))
        override = values.pop("mpp_override") or None
        return cls(**values, mpp_override=override, tissue=tissue)

    def check(self) -> None:
        """Raise ValueError, naming the option, when an option is out of range."""
        check_patch_options(self.patch_size, self.overlap, self.target_mpp)
        if not 0.0 <= self.tissue_threshold <= 1.0:
            raise ValueError(f"--tissue-threshold must be in [0, 1], got {self.tissue_threshold}")
        positive_number("--seg-mpp", self.seg_mpp)
        self.tissue.check()

    def fingerprint(self, override: float | None) -> str:
        """Canonical JSON of the options as applied to one slide (stored in its coords file)."""
        applied = asdict(replace(self, mpp_override=None))
        applied["mpp_override"] = override
        return json.dumps(applied, sort_keys=True)


@dataclass
class _Pending:
    """A slide whose tiles are being checked by the workers."""

    path: Path
    mpp: Mpp
    override: float | None
    geometry: PatchGeometry
    level: int
    read_size: int
    level_dims: tuple[tuple[int, int], ...]
    downsample: float
    thumbnail: np.ndarray
    tissue: TissueMask
    candidates: np.ndarray
    batch: CheckBatch | None = None


def _row(path: Path, status: str, n: int = 0, mpp: Mpp | None = None, error: str = "") -> dict:
    return {
        "slide": path.name,
        "status": status,
        "n_patches": n,
        "mpp": mpp.value if mpp else float("nan"),
        "mpp_source": mpp.source if mpp else "",
        "error": error,
    }


def list_slides(slides_dir: str | Path) -> list[Path]:
    """Files in `slides_dir` (not recursive) with a slide suffix, sorted by name."""
    slides_dir = input_folder("--slides", slides_dir)
    return sorted(
        p for p in slides_dir.iterdir() if p.is_file() and p.suffix.lower() in SLIDE_SUFFIXES
    )


def _outputs(out_dir: Path, path: Path) -> tuple[Path, Path]:
    return out_dir / "patches" / f"{path.stem}.h5", out_dir / "qc" / f"{path.stem}.png"


def _previous(path: Path, out_dir: Path, fingerprint: str) -> dict | None:
    """The row of a slide already tiled with the same options, read back from its coords file
    (its completion record); None when the slide is to be (re)done: no record, a record of
    other options or another file, or a QC image missing."""
    h5_path, qc_path = _outputs(out_dir, path)
    if not (h5_path.is_file() and qc_path.is_file()):
        return None
    try:
        coords, attrs = read_coords(h5_path)
    except (OSError, ValueError):
        return None
    if attrs.get("tiling_params") != fingerprint or attrs.get("slide_file") != path.name:
        return None
    status = "processed" if len(coords) else "no_tissue"
    return _row(path, status, len(coords), Mpp(attrs["mpp"], attrs["mpp_source"]))


def _segmentation_image(
    slide: openslide.OpenSlide, mpp: float, seg_mpp: float
) -> tuple[np.ndarray, float]:
    """The slide at about `seg_mpp` µm/px (RGB) and its exact µm/px along x."""
    needed = seg_mpp / mpp
    level = best_level(slide.level_downsamples, needed)
    width0, height0 = slide.level_dimensions[0]
    region = to_rgb(np.asarray(slide.read_region((0, 0), level, slide.level_dimensions[level])))
    size = (max(1, round(width0 / needed)), max(1, round(height0 / needed)))
    if size[0] < region.shape[1]:
        region = cv2.resize(region, size, interpolation=cv2.INTER_AREA)
    return region, mpp * width0 / region.shape[1]


def _prepare(
    path: Path, options: TilingOptions, override: float | None, checker: TileChecker
) -> _Pending | dict:
    """Open, find the MPP, segment and lay the grid; submit the tile check (or give the row)."""
    try:
        slide = openslide.OpenSlide(str(path))
    except (openslide.OpenSlideError, OSError) as exc:
        return _row(path, "failed_open", error=f"{path.name}: OpenSlide cannot open it: {exc}")
    with slide:
        try:
            mpp = resolve_mpp(slide.properties, path.name, override)
        except BadMppError as exc:
            return _row(path, "bad_mpp", error=str(exc))
        geometry = patch_geometry(
            options.patch_size, options.overlap, options.target_mpp, mpp.value
        )
        try:
            thumbnail, thumb_mpp = _segmentation_image(slide, mpp.value, options.seg_mpp)
        except openslide.OpenSlideError as exc:
            return _row(
                path,
                "failed_read",
                mpp=mpp,
                error=f"{path.name}: cannot read the segmentation level: {exc}",
            )
        tissue = segment_tissue(thumbnail, thumb_mpp, options.tissue)
        width0, height0 = slide.level_dimensions[0]
        candidates = tissue_grid(width0, height0, geometry, tissue.mask, options.tissue_threshold)
        level, read_size = read_plan(
            slide.level_downsamples, geometry.patch_size_level0, options.patch_size
        )
        pending = _Pending(
            path,
            mpp,
            override,
            geometry,
            level,
            read_size,
            tuple(slide.level_dimensions),
            float(slide.level_downsamples[level]),
            thumbnail,
            tissue,
            candidates,
        )
    _submit(pending, options, checker)
    return pending


def _submit(pending: _Pending, options: TilingOptions, checker: TileChecker) -> None:
    """Send the slide's candidate patches to the tile check."""
    args = (pending.tissue.threshold, options.black_threshold, options.white_black)
    pending.batch = checker.submit(
        pending.path, pending.candidates, pending.level, pending.read_size, args
    )


def _attrs(pending: _Pending, options: TilingOptions) -> dict[str, Any]:
    """Attributes of the coords dataset: CLAM's and TRIDENT's keys, and ours."""
    geometry, mpp = pending.geometry, pending.mpp.value
    width0, height0 = pending.level_dims[0]
    custom_downsample = geometry.patch_size_level0 / options.patch_size / pending.downsample
    target_dims = np.array(
        [round(width0 * mpp / options.target_mpp), round(height0 * mpp / options.target_mpp)]
    )
    return {
        "patch_size": options.patch_size,
        "patch_level": pending.level,
        "downsample": np.array([pending.downsample, pending.downsample]),
        "downsampled_level_dim": target_dims.astype(np.int64),
        "level_dim": np.array(pending.level_dims[pending.level], dtype=np.int64),
        "name": pending.path.stem,
        "save_path": "patches",
        "patch_size_level0": geometry.patch_size_level0,
        "read_size": pending.read_size,
        "custom_downsample": custom_downsample,
        "level0_magnification": 10.0 / mpp,
        "target_magnification": 10.0 / options.target_mpp,
        "overlap": options.overlap,
        "overlap_level0": geometry.overlap_level0,
        "mpp": mpp,
        "mpp_source": pending.mpp.source,
        "target_mpp": options.target_mpp,
        "tissue_threshold": options.tissue_threshold,
        "saturation_threshold": pending.tissue.threshold,
        "slide_file": pending.path.name,
        "tiling_params": options.fingerprint(pending.override),
    }


def _finish(pending: _Pending, out_dir: Path, options: TilingOptions, checker: TileChecker) -> dict:
    """Collect a slide's tile checks and write its outputs; give its row."""
    path = pending.path
    try:
        checks = checker.collect(pending.batch)
    except WorkerDiedError as exc:
        return _row(path, "failed_read", mpp=pending.mpp, error=str(exc))
    keep = np.concatenate([c.keep for c in checks]) if checks else np.zeros(0, bool)
    failures = [f for c in checks for f in c.failures]
    h5_path, qc_path = _outputs(out_dir, path)
    h5_path.unlink(missing_ok=True)  # the completion record goes first and comes back last
    if failures:
        x, y, message = failures[0]
        return _row(
            path,
            "failed_read",
            mpp=pending.mpp,
            error=(
                f"{path.name}: {len(failures)} of {len(keep)} tiles unreadable (level "
                f"{pending.level}, {pending.read_size} px); first at x={x} y={y}: {message}"
            ),
        )
    coords = pending.candidates[keep]
    scale = (
        pending.level_dims[0][0] / pending.tissue.mask.shape[1],
        pending.level_dims[0][1] / pending.tissue.mask.shape[0],
    )
    qc = draw_qc(
        pending.thumbnail, pending.tissue, coords, pending.geometry.patch_size_level0, scale
    )
    write_png(qc_path, qc)
    write_coords(h5_path, coords, _attrs(pending, options))
    status = "processed" if len(coords) else "no_tissue"
    return _row(path, status, len(coords), pending.mpp)


def _guard(path: Path, step: Any, *args: Any) -> Any:
    """Run one slide's step; an unexpected error becomes that slide's `failed_read` row."""
    try:
        return step(*args)
    except Exception as exc:  # noqa: BLE001 - one bad slide must not stop the batch
        where = traceback.extract_tb(exc.__traceback__)[-1]
        return _row(
            path,
            "failed_read",
            error=f"{path.name}: {type(exc).__name__}: {exc} (at {Path(where.filename).name}:"
            f"{where.lineno})",
        )


def _write_list(out_dir: Path, rows: list[dict]) -> pd.DataFrame:
    frame = pd.DataFrame(sorted(rows, key=lambda r: r["slide"]), columns=COLUMNS)
    write_csv(out_dir / "process_list.csv", frame)
    return frame


def tile_slides(
    slides_dir: str | Path,
    out_dir: str | Path,
    options: TilingOptions | None = None,
    workers: int = 1,
    show_progress: bool = True,
) -> pd.DataFrame:
    """Tile every slide in `slides_dir` into `out_dir`; returns (and writes) the process list."""
    options = options or TilingOptions()
    options.check()
    bounded_int("--workers", workers, 1, MAX_WORKERS)
    out_dir = output_folder("--out", out_dir)
    overrides = read_overrides(options.mpp_override) if options.mpp_override else {}
    slides = list_slides(slides_dir)
    rows: list[dict] = []
    pending: deque[_Pending] = deque()
    checker = TileChecker(workers)
    stems: dict[str, str] = {}
    for path in progress(slides, desc="wsi tile", enabled=show_progress):
        override = override_for(overrides, path.name)
        if path.stem in stems:
            done = _row(
                path,
                "failed_open",
                error=f"{path.name}: same name as {stems[path.stem]}; its outputs would "
                f"overwrite patches/{path.stem}.h5 (rename one of them)",
            )
        else:
            stems[path.stem] = path.name
            done = _previous(path, out_dir, options.fingerprint(override))
        if done is None:
            checker.start()
            done = _guard(path, _prepare, path, options, override, checker)
        if isinstance(done, _Pending):
            pending.append(done)
        else:
            rows.append(done)
        # One slide stays in flight while the next one is segmented.
        while len(pending) > 1:
            first = pending.popleft()
            rows.append(_guard(first.path, _finish, first, out_dir, options, checker))
        _write_list(out_dir, rows)
    while pending:
        first = pending.popleft()
        rows.append(_guard(first.path, _finish, first, out_dir, options, checker))
    return _write_list(out_dir, rows)
