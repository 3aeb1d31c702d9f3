"""Checks of the values a user hands a command or an options dataclass, shared by all of them.

Each check raises `ArgumentError` (a ValueError) whose one-line message names the option, the
value given and what was expected, and returns the value when it is fine, so an options class
checks its fields with one call each. Numbers must be finite: `inf` passes `> 0` and NaN fails
every comparison silently, so both are refused explicitly. Folders are checked before anything
is written, so a command that refuses its arguments leaves nothing behind.
"""

from __future__ import annotations

import math
from pathlib import Path

MAX_WORKERS = 256
"""Most worker processes (or threads) a command starts: more is a typo on any machine we know."""


class ArgumentError(ValueError):
    """An option or argument has a value the command cannot use; the message names it."""


def finite_number(name: str, value: float, *, minimum: float = -math.inf) -> float:
    """`value` when it is a finite number >= `minimum`, else ArgumentError naming `name`."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ArgumentError(f"{name} must be a finite number, got {value!r}")
    if value < minimum:
        raise ArgumentError(f"{name} must be >= {minimum:g}, got {value!r}")
    return value


def positive_number(name: str, value: float) -> float:
    """`value` when it is a finite number > 0, else ArgumentError naming `name`."""
    if finite_number(name, value) <= 0:
        raise ArgumentError(f"{name} must be positive, got {value!r}")
    return value


def bounded_int(name: str, value: int, low: int, high: int) -> int:
    """`value` when it is an integer (not a bool or float) in [low, high], else ArgumentError
    naming `name` and the range."""
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ArgumentError(f"{name} must be an integer in [{low}, {high}], got {value!r}")
    return value


def input_folder(name: str, path: str | Path) -> Path:
    """`path` as a Path when it is an existing folder, else ArgumentError naming `name`."""
    path = Path(path)
    if not path.exists():
        raise ArgumentError(f"{name} {path}: no such folder")
    if not path.is_dir():
        raise ArgumentError(f"{name} {path}: not a folder")
    return path


def input_file(name: str, path: str | Path) -> Path:
    """`path` as a Path when it is an existing file (not a folder), else ArgumentError naming
    `name`."""
    path = Path(path)
    if not path.exists():
        raise ArgumentError(f"{name} {path}: no such file")
    if path.is_dir():
        raise ArgumentError(f"{name} {path}: is a folder, expected a file")
    return path


def output_folder(name: str, path: str | Path) -> Path:
    """`path` as a Path when it is a folder or does not exist yet (the command creates it), else
    ArgumentError naming `name`; creates nothing."""
    path = Path(path)
    if path.exists() and not path.is_dir():
        raise ArgumentError(f"{name} {path}: exists and is not a folder; expected an output folder")
    return path
