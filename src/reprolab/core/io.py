"""Atomic, deterministic writers for every file a job produces.

Each writer writes to a temporary file in the destination folder and renames it into place, so
a killed job never leaves a half-written output that a rerun would mistake for a finished one.
JSON has sorted keys and floats rounded to 10 significant digits (NaN becomes null); HDF5
datasets are written without modification times so the same arrays give the same bytes.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import tempfile
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np

FLOAT_DIGITS = 10


@contextlib.contextmanager
def atomic_path(path: str | Path) -> Iterator[Path]:
    """Yield a temporary path beside `path`; on success rename it to `path`, on error delete it."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        os.chmod(tmp_path, 0o644)
        os.replace(tmp_path, path)
    finally:
        tmp_path.unlink(missing_ok=True)


def write_text(path: str | Path, text: str) -> None:
    """Write `text` to `path` atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def canonical(value: Any) -> Any:
    """Turn numpy scalars/arrays into plain Python and round floats for stable JSON."""
    if isinstance(value, Mapping):
        return {str(k): canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [canonical(v) for v in value]
    if isinstance(value, np.ndarray):
        return canonical(value.tolist())
    if isinstance(value, np.generic):
        return canonical(value.item())
    if isinstance(value, float):
        if not math.isfinite(value):
            return None
        return float(f"{value:.{FLOAT_DIGITS}g}")
    return value


def dumps_json(data: Any) -> str:
    """Canonical JSON text: sorted keys, two-space indent, rounded floats, trailing newline."""
    return json.dumps(canonical(data), sort_keys=True, indent=2, allow_nan=False) + "\n"


def write_json(path: str | Path, data: Any) -> None:
    """Write `data` as canonical JSON, atomically."""
    write_text(path, dumps_json(data))


def read_json(path: str | Path) -> Any:
    """Read a JSON file, naming the file when it is not valid JSON."""
    try:
        return json.loads(Path(path).read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from exc


def write_h5(
    path: str | Path,
    arrays: Mapping[str, np.ndarray],
    attrs: Mapping[str, Any] | None = None,
    dataset_attrs: Mapping[str, Mapping[str, Any]] | None = None,
) -> None:
    """Write named arrays to an HDF5 file with no timestamps, atomically.

    `attrs` go on the file root; `dataset_attrs` maps a dataset name to the attributes set on
    that dataset (where CLAM and TRIDENT keep the attributes of their `coords`).
    """
    import h5py

    with atomic_path(path) as tmp:
        with h5py.File(tmp, "w", track_order=True) as handle:
            for key, value in (attrs or {}).items():
                handle.attrs[key] = value
            for name in sorted(arrays):
                dataset = handle.create_dataset(
                    name, data=np.asarray(arrays[name]), track_times=False
                )
                for key, value in (dataset_attrs or {}).get(name, {}).items():
                    dataset.attrs[key] = value


def read_h5(path: str | Path) -> dict[str, np.ndarray]:
    """Read every dataset at the root of an HDF5 file into memory."""
    import h5py

    with h5py.File(path, "r") as handle:
        return {name: handle[name][()] for name in handle}


def write_csv(path: str | Path, frame: Any) -> None:
    """Write a pandas DataFrame as CSV without its index, atomically."""
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, index=False, lineterminator="\n")
