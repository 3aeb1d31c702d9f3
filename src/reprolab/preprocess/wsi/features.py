"""Tile features: embed every tile of a tiled slide with a frozen encoder, slide by slide.

Input: the tiling stage's `<patches>/<slide>.h5` (dataset `coords` (N, 2), level-0 x, y of each
tile's top-left corner; attributes `patch_level` and `read_size` or `patch_size`, on the
`coords` dataset as CLAM puts them or at the root) and its `process_list.csv` (columns
`slide`, `status`).
Output: `<out>/<slide>.h5` with datasets `features` (N, D) float32 and `coords` (N, 2) int64 at
the top level — the layout CLAM's MIL loaders read — whose root attributes are the coords
file's attributes plus the encoder's (`encoder_kind`, `encoder_dim`, `encoder_seed`,
`encoder_name`, `encoder_input_size`, `encoder_spec`), and `<out>/process_list.csv`.

Choices:
- Tiles are read through the shared reader (`reader.read_tile`: per-process handle cache, a
  failed read retried on a fresh handle) at `patch_level`, `read_size` x `read_size` pixels
  (the tiling stage's size at that level; `patch_size` in CLAM's files, where the two agree),
  transparent areas outside the slide white, then resized once, straight to the encoder's
  input size, and normalised by the encoder's transform inside the DataLoader workers.
- Each DataLoader worker drops the handles it inherited and opens its own on first use.
- Order is the coords order (no shuffling) and batches are the same whatever the number of
  workers, so with a fixed torch thread count the features are the same bytes for any
  `workers`; the HDF5 file is written atomically without timestamps.
- A slide with no coords gives a (0, D) features file. In a cohort, slides whose tiling status
  is not in `TILED_STATUSES` are skipped, a slide that fails (unreadable file, bad coords) is
  recorded as failed with its error and the batch goes on, and a slide whose features file
  exists and was made by the same encoder spec from the same coords is not redone. The
  process list describes the output folder, so a resumed batch writes the same list as an
  uninterrupted one.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import openslide
import pandas as pd
import torch
from torch.utils.data import DataLoader, Dataset

from reprolab.core.arguments import MAX_WORKERS, bounded_int, input_folder, output_folder
from reprolab.core.io import write_csv, write_h5
from reprolab.core.progress import progress
from reprolab.preprocess.wsi.coords_h5 import read_coords, tile_geometry
from reprolab.preprocess.wsi.encoders import Encoder, TileTransform, build_encoder
from reprolab.preprocess.wsi.reader import TileReadError, read_tile, slide_cache

TILED_STATUSES = ("processed", "no_tissue")
PROCESS_LIST = "process_list.csv"
PROCESS_COLUMNS = ["slide", "status", "n_tiles", "dim", "error"]
MAX_BATCH_SIZE = 65_536
"""Largest encoder batch (tiles): a batch is one array in memory, larger is a typo."""

log = logging.getLogger(__name__)


class TileDataset(Dataset):
    """The tiles of one slide at the coords, as encoder-ready tensors, in coords order."""

    def __init__(
        self,
        slide_path: str | Path,
        coords: np.ndarray,
        level: int,
        size: int,
        transform: TileTransform,
    ) -> None:
        self.slide_path = Path(slide_path)
        self.coords = coords
        self.level = level
        self.size = size
        self.transform = transform

    def __len__(self) -> int:
        return len(self.coords)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, str]:
        """The tile's tensor and "" — or a blank tensor and the error that reading it raised."""
        x, y = (int(v) for v in self.coords[index])
        try:
            tile = read_tile(self.slide_path, x, y, self.level, self.size)
            return self.transform(tile), ""
        except Exception as exc:
            blank = torch.zeros(3, self.transform.size, self.transform.size)
            return blank, f"tile {index} at ({x}, {y}): {type(exc).__name__}: {exc}"


def _forget_inherited_handles(_worker: int) -> None:
    """In a DataLoader worker: drop slide handles copied from the parent at fork time."""
    slide_cache().close()


def _check_slide(slide_path: Path, level: int) -> None:
    """Fail early, in this process, when the slide cannot be opened or lacks `level`."""
    try:
        slide = openslide.OpenSlide(str(slide_path))
    except openslide.OpenSlideError as exc:
        raise TileReadError(f"{slide_path}: cannot open ({type(exc).__name__}: {exc})") from exc
    try:
        if not 0 <= level < slide.level_count:
            raise ValueError(
                f"{slide_path}: patch_level {level} not in the slide's {slide.level_count} levels"
            )
    finally:
        slide.close()


def _embed(
    batches: Iterable[tuple[torch.Tensor, list[str]]], encoder: Encoder, device: str
) -> tuple[list[np.ndarray], str]:
    """The features of each batch, stopping at the first tile that failed (and its error).

    Read errors come back as values, not exceptions, so a failed slide's DataLoader workers
    are shut down at once when the loop ends, not held by a traceback.
    """
    chunks = [np.zeros((0, encoder.dim), dtype=np.float32)]
    with torch.inference_mode():
        for pixels, errors in batches:
            failed = [error for error in errors if error]
            if failed:
                return chunks, failed[0]
            chunks.append(encoder(pixels.to(device)).float().cpu().numpy())
    return chunks, ""


def extract_features(
    slide_path: str | Path,
    coords_path: str | Path,
    out_path: str | Path,
    encoder: Encoder,
    batch_size: int,
    workers: int,
    threads: int,
    device: str = "cpu",
    show_progress: bool = True,
) -> int:
    """Embed the tiles of one slide and write `out_path` (see the module docstring).

    Runs torch on `threads` threads and the encoder on `device`; reads tiles in `workers`
    DataLoader worker processes (0: in this process). Returns the number of tiles.
    """
    slide_path, out_path = Path(slide_path), Path(out_path)
    coords, attrs = read_coords(coords_path)
    level, size = tile_geometry(coords_path, attrs)
    _check_slide(slide_path, level)
    torch.set_num_threads(threads)
    encoder = encoder.to(device)
    dataset = TileDataset(slide_path, coords, level, size, encoder.transform)
    loader = DataLoader(
        dataset,
        batch_size=batch_size,
        shuffle=False,
        num_workers=workers,
        worker_init_fn=_forget_inherited_handles,
    )
    desc = f"features {slide_path.stem}"
    chunks, error = _embed(progress(loader, desc, show_progress, len(loader)), encoder, device)
    if error:
        raise TileReadError(f"{slide_path}: {error}")
    features = np.concatenate(chunks).astype(np.float32)
    write_h5(out_path, {"features": features, "coords": coords}, {**attrs, **encoder.attrs()})
    return len(coords)


def find_slide(slides_dir: Path, slide: str) -> Path:
    """The file in `slides_dir` named `slide` or `slide` plus one suffix (`a` → `a.svs`)."""
    exact = slides_dir / slide
    if exact.is_file():
        return exact
    matches = sorted(p for p in slides_dir.iterdir() if p.is_file() and p.stem == slide)
    if len(matches) != 1:
        found = [p.name for p in matches] or "none"
        raise FileNotFoundError(
            f"{slides_dir}: expected one slide file for '{slide}', found {found}"
        )
    return matches[0]


def find_tiling_list(patches_dir: Path) -> Path:
    """The tiling stage's process list: in the patches folder or the folder above it."""
    for folder in (patches_dir, patches_dir.parent):
        if (folder / PROCESS_LIST).is_file():
            return folder / PROCESS_LIST
    raise FileNotFoundError(
        f"no {PROCESS_LIST} in {patches_dir} or {patches_dir.parent}: "
        "expected the tiling stage's process list (columns slide, status)"
    )


def read_tiling_list(path: Path) -> pd.DataFrame:
    """The tiling process list, checked for its `slide` and `status` columns."""
    frame = pd.read_csv(path, dtype={"slide": str, "status": str}, keep_default_na=False)
    missing = [c for c in ("slide", "status") if c not in frame.columns]
    if missing:
        raise ValueError(f"{path}: columns {missing} missing (found {list(frame.columns)})")
    return frame


def _finished(out_path: Path, coords_path: Path, encoder: Encoder) -> int | None:
    """The tile count of an existing features file made by the same encoder spec from the same
    coords, else None (the slide is to be done)."""
    if not out_path.is_file():
        return None
    try:
        with h5py.File(out_path, "r") as handle:
            same_encoder = handle.attrs.get("encoder_spec") == encoder.attrs()["encoder_spec"]
            done_coords = handle["coords"][()].reshape(-1, 2)
            count = int(handle["features"].shape[0])
    except (OSError, KeyError):
        return None
    same_coords = np.array_equal(done_coords, read_coords(coords_path)[0])
    return count if same_encoder and same_coords else None


def _error_message(exc: BaseException) -> str:
    """One line for the process list: the exception type and the first line of its message."""
    lines = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {lines[0] if lines else ''}"


def extract_cohort(
    slides_dir: str | Path,
    patches_dir: str | Path,
    out_dir: str | Path,
    encoder_spec: dict[str, Any],
    batch_size: int,
    workers: int,
    threads: int,
    device: str = "cpu",
    tiling_list: str | Path | None = None,
    show_progress: bool = True,
) -> pd.DataFrame:
    """Embed every tiled slide of a cohort into `out_dir`; return (and write) its process list.

    `tiling_list` defaults to the `process_list.csv` found by `find_tiling_list`. Its `slide`
    column names a file of `slides_dir` (`a.svs`, or its stem `a`); the slide's coords are
    `patches_dir/a.h5` and its features `out_dir/a.h5`. Rows of the returned list, in the
    tiling list's order: `slide` (as given), `status` (processed, skipped or failed),
    `n_tiles`, `dim`, `error`.
    """
    bounded_int("--batch-size", batch_size, 1, MAX_BATCH_SIZE)
    bounded_int("--workers", workers, 0, MAX_WORKERS)
    bounded_int("--threads", threads, 1, MAX_WORKERS)
    slides_dir = input_folder("--slides", slides_dir)
    patches_dir = input_folder("--patches", patches_dir)
    out_dir = output_folder("--out", out_dir)
    tiling = read_tiling_list(Path(tiling_list) if tiling_list else find_tiling_list(patches_dir))
    encoder = build_encoder(encoder_spec)
    rows = []
    for slide, status in zip(tiling["slide"], tiling["status"], strict=True):
        row = {"slide": slide, "status": "processed", "n_tiles": None, "dim": encoder.dim}
        row["error"] = ""
        if status not in TILED_STATUSES:
            row.update(status="skipped", dim=None, error=f"tiling status '{status}'")
        else:
            try:
                slide_path = find_slide(slides_dir, slide)
                coords_path = patches_dir / f"{slide_path.stem}.h5"
                out_path = out_dir / f"{slide_path.stem}.h5"
                row["n_tiles"] = _finished(out_path, coords_path, encoder)
                if row["n_tiles"] is None:
                    row["n_tiles"] = extract_features(
                        slide_path,
                        coords_path,
                        out_path,
                        encoder,
                        batch_size,
                        workers,
                        threads,
                        device,
                        show_progress,
                    )
            except Exception as exc:  # a bad slide is recorded; the batch goes on
                log.warning("%s: features failed: %s", slide, exc)
                row.update(status="failed", dim=None, error=_error_message(exc))
        rows.append(row)
        _write_process_list(out_dir, rows)
    return _write_process_list(out_dir, rows)


def _write_process_list(out_dir: Path, rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Write the rows so far as `out_dir/process_list.csv` and return them as a DataFrame."""
    frame = pd.DataFrame(rows, columns=PROCESS_COLUMNS)
    frame = frame.astype({"n_tiles": "Int64", "dim": "Int64"})
    write_csv(out_dir / PROCESS_LIST, frame)
    return frame
