"""The patch coordinates file, `patches/<slide>.h5`, in the layout CLAM and TRIDENT read.

One dataset, `coords`: (N, 2) int64 level-0 (x, y). Its attributes sit on the dataset (where
CLAM's `Whole_Slide_Bag_FP` and TRIDENT's `read_coords` look: `f['coords'].attrs`), not on the
file root; `read_coords` also accepts attributes at the root (older files, other tools).

The attributes `tiling._attrs` writes, and how each reader uses them:

- `patch_size` (px at `target_mpp`), `patch_size_level0`, `level0_magnification` (10 / mpp) and
  `target_magnification` (10 / target_mpp): TRIDENT's reader; `patch_size * level0_magnification
  / target_magnification` is `patch_size_level0`.
- `patch_level`, `patch_size`, `downsample`, `level_dim`, `downsampled_level_dim`, `name`,
  `save_path`: CLAM's. `read_region(coord, patch_level, (patch_size, patch_size))` is the exact
  patch when `custom_downsample == 1` (the pyramid has a level at the target resolution);
  otherwise the patch is `read_size` px at `patch_level`, resized to `patch_size`
  (`custom_downsample` = that factor, as in TRIDENT's legacy reader).
- ours: `read_size`, `overlap`, `overlap_level0`, `mpp`, `mpp_source`, `target_mpp`,
  `tissue_threshold`, `saturation_threshold`, `slide_file`, `tiling_params` (the options as
  JSON, compared on a rerun).

Tiling writes this file last, after the slide's QC image, so it doubles as the slide's
completion record (`tiling._previous`).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import h5py
import numpy as np

from reprolab.core.io import write_h5


def write_coords(path: str | Path, coords: np.ndarray, attrs: Mapping[str, Any]) -> None:
    """Write `coords` as an (N, 2) int64 `coords` dataset with `attrs` on it, atomically."""
    coords = np.asarray(coords, dtype=np.int64).reshape(-1, 2)
    write_h5(path, {"coords": coords}, dataset_attrs={"coords": attrs})


def read_coords(path: str | Path) -> tuple[np.ndarray, dict[str, Any]]:
    """The (N, 2) int64 coordinates of a coords file (ours, CLAM's or TRIDENT's) and its
    attributes (the file root's, overridden by those on the `coords` dataset)."""
    with h5py.File(path, "r") as handle:
        if "coords" not in handle:
            raise ValueError(f"{path}: no 'coords' dataset (found {sorted(handle)})")
        dataset = handle["coords"]
        coords = dataset[()]
        merged = {**dict(handle.attrs), **dict(dataset.attrs)}
    attrs = {key: _plain(value) for key, value in merged.items()}
    if coords.size == 0:
        coords = coords.reshape(0, 2)
    if coords.ndim != 2 or coords.shape[1] != 2 or not np.issubdtype(coords.dtype, np.integer):
        raise ValueError(
            f"{path}: 'coords' must be (N, 2) integers, got {coords.shape} {coords.dtype}"
        )
    tile_geometry(path, attrs)
    return coords.astype(np.int64), attrs


def tile_geometry(path: str | Path, attrs: Mapping[str, Any]) -> tuple[int, int]:
    """(level, pixels to read there) of a coords file's tiles, from its attributes.

    Ours and CLAM's: `patch_level` and `read_size` (ours, when the target resolution falls
    between levels) else `patch_size`. TRIDENT's (no `patch_level`): `patch_size_level0` pixels
    of level 0.
    """
    if "patch_level" in attrs:
        size = attrs.get("read_size", attrs.get("patch_size"))
        if size is None:
            raise ValueError(f"{path}: attribute 'patch_size' missing (found {sorted(attrs)})")
        return int(attrs["patch_level"]), int(size)
    if "patch_size_level0" in attrs:
        return 0, int(attrs["patch_size_level0"])
    raise ValueError(
        f"{path}: attribute 'patch_level' (or TRIDENT's 'patch_size_level0') missing "
        f"(found {sorted(attrs)})"
    )


def _plain(value: Any) -> Any:
    """HDF5 attribute values as plain Python scalars (arrays stay arrays)."""
    if isinstance(value, bytes):
        return value.decode()
    if isinstance(value, np.generic):
        return value.item()
    return value
