"""Read a folder of tile features back as MIL bags, ours or CLAM's.

A bag is one slide: `features` (N, D) float32, `coords` (N, 2) int64 and the file's attributes.
Three layouts are read, looked for in this order for a slide `s` under `features_dir`:

- `s.h5` — what `reprolab wsi features` writes (datasets `features` and `coords` at the root);
- `h5_files/s.h5` — CLAM's `extract_features_fp.py` output, the same dataset names;
- `pt_files/s.pt` — CLAM's training input, a saved (N, D) tensor with no coordinates. Its coords
  come from the sibling `h5_files/s.h5` when there is one; otherwise they are all -1 and the
  attributes say `coords_known = False`.

Attributes are the file's root attributes merged with those of its `coords` dataset (where CLAM
puts `patch_size` and `patch_level`); features stored as float16 or float64 are cast to float32.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, NamedTuple

import h5py
import numpy as np


class FeatureBag(NamedTuple):
    """One slide's tile features, their level-0 coordinates and the file's attributes."""

    features: np.ndarray
    coords: np.ndarray
    attrs: dict[str, Any]


def _read_h5(path: Path) -> FeatureBag:
    """A bag from an HDF5 file with `features` and `coords` datasets at the root."""
    with h5py.File(path, "r") as handle:
        missing = [name for name in ("features", "coords") if name not in handle]
        if missing:
            raise ValueError(f"{path}: datasets {missing} missing (found {sorted(handle)})")
        features = handle["features"][()]
        coords = handle["coords"][()]
        attrs = {**dict(handle.attrs), **dict(handle["coords"].attrs)}
    if coords.size == 0:
        coords = coords.reshape(0, 2)
    return _checked(path, features, coords, attrs)


def _read_pt(path: Path) -> FeatureBag:
    """A bag from CLAM's `.pt` tensor, with coords from the sibling h5 file when present."""
    import torch

    tensor = torch.load(path, map_location="cpu", weights_only=True)
    if not isinstance(tensor, torch.Tensor):
        raise ValueError(f"{path}: expected a saved (N, D) tensor, got {type(tensor).__name__}")
    features = tensor.float().numpy()
    sibling = path.parent.parent / "h5_files" / f"{path.stem}.h5"
    if sibling.is_file():
        with h5py.File(sibling, "r") as handle:
            coords = handle["coords"][()]
            attrs = {**dict(handle.attrs), **dict(handle["coords"].attrs), "coords_known": True}
        return _checked(path, features, coords.reshape(-1, 2), attrs)
    coords = np.full((len(features), 2), -1, dtype=np.int64)
    return _checked(path, features, coords, {"coords_known": False})


def _checked(
    path: Path, features: np.ndarray, coords: np.ndarray, attrs: dict[str, Any]
) -> FeatureBag:
    """The bag with its shapes checked and its dtypes made float32 / int64."""
    if features.ndim != 2 or not np.issubdtype(features.dtype, np.floating):
        raise ValueError(f"{path}: features must be (N, D) floats, got {features.shape}")
    if coords.shape != (len(features), 2) or not np.issubdtype(coords.dtype, np.integer):
        raise ValueError(
            f"{path}: coords must be ({len(features)}, 2) integers to match the features, "
            f"got {coords.shape} {coords.dtype}"
        )
    return FeatureBag(features.astype(np.float32), coords.astype(np.int64), attrs)


def read_feature_bag(path: str | Path) -> FeatureBag:
    """One bag from a features file: `.h5` (ours or CLAM's) or CLAM's `.pt`."""
    path = Path(path)
    if path.suffix == ".pt":
        return _read_pt(path)
    if path.suffix == ".h5":
        return _read_h5(path)
    raise ValueError(f"{path}: expected a .h5 or .pt features file")


def bag_path(features_dir: str | Path, slide: str) -> Path:
    """A slide's features file: `<slide>.h5`, `h5_files/<slide>.h5` or `pt_files/<slide>.pt`."""
    features_dir = Path(features_dir)
    candidates = [
        features_dir / f"{slide}.h5",
        features_dir / "h5_files" / f"{slide}.h5",
        features_dir / "pt_files" / f"{slide}.pt",
    ]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    tried = ", ".join(str(c) for c in candidates)
    raise FileNotFoundError(f"no features for slide '{slide}': tried {tried}")


def load_feature_bags(features_dir: str | Path, slides: list[str]) -> list[FeatureBag]:
    """The bags of `slides`, in that order; every bag must have the same feature size."""
    bags = []
    for slide in slides:
        path = bag_path(features_dir, slide)
        bag = read_feature_bag(path)
        if bags and bag.features.shape[1] != bags[0].features.shape[1]:
            raise ValueError(
                f"{path}: feature size {bag.features.shape[1]} differs from "
                f"{bags[0].features.shape[1]} of slide '{slides[0]}'"
            )
        bags.append(bag)
    return bags
