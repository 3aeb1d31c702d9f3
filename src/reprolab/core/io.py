"""Atomic, deterministic writers for every file a job produces.

Each writer writes to a temporary file in the destination folder and renames it into place, so
a killed job never leaves a half-written output that a rerun would mistake for a finished one.
A folder written as one output (`atomic_dir`) is built beside its place and swapped in by
`replace_dir`, which never leaves the old and new files mixed and never loses both.
JSON has sorted keys and floats rounded to 10 significant digits (NaN becomes null); HDF5
datasets are written without modification times so the same arrays give the same bytes.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator, Mapping
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


@contextlib.contextmanager
def atomic_dir(path: str | Path) -> Iterator[Path]:
    """Yield a new empty folder beside `path`; on success it replaces `path` whole
    (`replace_dir`), on error it is deleted and `path` is left as it was."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    try:
        yield tmp
        os.chmod(tmp, 0o755)
        replace_dir(tmp, path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _aside(path: Path) -> Path:
    """Where `replace_dir` keeps the old folder of `path` while the new one moves in (a fixed
    name, so that `recover_dir` finds it after a crash)."""
    return path.with_name(f".{path.name}.old")


def replace_dir(new: str | Path, path: str | Path) -> None:
    """Move folder `new` to `path` (same file system), replacing the folder there.

    POSIX cannot rename a folder over a non-empty one, so the old folder is renamed aside, the
    new one renamed in, and the old one deleted. A reader sees the whole old folder or the
    whole new one, never a mix, except for the instant between the two renames when `path` is
    absent. An error at the second rename puts the old folder back; a crash between the two
    leaves it aside, and `recover_dir` (which this function runs first) puts it back. One writer
    per `path` at a time.
    """
    new, path = Path(new), Path(path)
    recover_dir(path)
    aside = _aside(path)
    had_old = path.exists()
    if had_old:
        os.rename(path, aside)
    try:
        os.rename(new, path)
    except BaseException:
        if had_old:
            os.rename(aside, path)
        raise
    if had_old:
        shutil.rmtree(aside)


def recover_dir(path: str | Path) -> None:
    """Settle a `replace_dir` of `path` that a crash cut short: the old folder left aside is
    put back when `path` is missing, and deleted when `path` already holds the new folder."""
    path = Path(path)
    aside = _aside(path)
    if not aside.exists():
        return
    if path.exists():
        shutil.rmtree(aside)
    else:
        os.rename(aside, path)


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


def write_jsonl(path: str | Path, records: Iterable[Mapping[str, Any]]) -> None:
    """One JSON object per line, keys sorted, atomically."""
    write_text(path, "".join(json.dumps(record, sort_keys=True) + "\n" for record in records))


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
