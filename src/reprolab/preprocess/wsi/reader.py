"""Tile reads through OpenSlide with a lazily opened, per-process cache of slide handles.

Both the tiling stage (its tile check runs in worker processes) and the feature stage (its
torch Dataset, in DataLoader workers) read tiles through here. Each process keeps its own
handles (an OpenSlide handle must not cross a fork or a pickle), opened on first use and kept
in a small LRU (reopened when the file changes on disk). OpenSlide errors are sticky (after
one, every read on that handle fails), so a failed read is retried once on a freshly opened
handle; a second failure raises `TileReadError` naming the slide and the tile, and drops the
handle so later reads start clean.

`read_tile(path, x, y, level, size, out_size)` reads `size` x `size` pixels of `level` at the
level-0 position (x, y) and returns an (out_size, out_size, 3) uint8 RGB array (transparent
pixels, outside the scanned area, become white). `read_patch` picks the level itself: the one
with the largest downsample not above the one needed, read and resized when it is not exact.

Pixels come straight from `openslide_read_region` into a numpy buffer (`read_argb`: OpenSlide's
own premultiplied ARGB), not through `OpenSlide.read_region`'s PIL image and the copy
`np.asarray` makes of it: that copy costs about a tenth of the read of a 256-px tile.
`argb_to_rgba` then applies openslide-python's own converter in place, so `read_rgba` gives
byte for byte what `np.asarray(OpenSlide.read_region(...))` gives. This uses three private
names of openslide-python (`OpenSlide._osr`, `lowlevel._read_region`, `_convert.argb2rgba`),
which is why the package is pinned to one version (1.4.7) and `test_reader` compares the bytes.
The byte views (`bgra_view`) assume a little-endian machine, as are all that openslide-bin has
wheels for.
"""

from __future__ import annotations

import ctypes
import os
from collections import OrderedDict
from collections.abc import Sequence
from pathlib import Path

import cv2
import numpy as np
import openslide
from openslide import _convert, lowlevel

LEVEL_TOLERANCE = 0.01
_ARGB_POINTER = ctypes.POINTER(ctypes.c_uint32)


class TileReadError(RuntimeError):
    """A tile could not be read, even on a fresh handle."""


class SlideCache:
    """Open OpenSlide handles by path, least recently used closed first.

    A handle is reopened when its file changed on disk (inode, size or modification time), so a
    long-lived process never reads a replaced slide through a stale handle.
    """

    def __init__(self, max_open: int = 16) -> None:
        self.max_open = max_open
        self._handles: OrderedDict[str, tuple[openslide.OpenSlide, tuple[int, int, int]]] = (
            OrderedDict()
        )

    def get(self, path: str | Path) -> openslide.OpenSlide:
        """The handle of `path`, opened on first use (raises OpenSlide's open errors)."""
        key = str(path)
        stat = os.stat(key)
        signature = (stat.st_ino, stat.st_size, stat.st_mtime_ns)
        if key in self._handles:
            handle, known = self._handles[key]
            if known == signature:
                self._handles.move_to_end(key)
                return handle
            self.drop(key)
        handle = openslide.OpenSlide(key)
        self._handles[key] = (handle, signature)
        while len(self._handles) > self.max_open:
            _, (oldest, _) = self._handles.popitem(last=False)
            oldest.close()
        return handle

    def drop(self, path: str | Path) -> None:
        """Close and forget the handle of `path`, if open."""
        entry = self._handles.pop(str(path), None)
        if entry is not None:
            entry[0].close()

    def reopen(self, path: str | Path) -> openslide.OpenSlide:
        """A fresh handle of `path` (after an error made the old one unusable)."""
        self.drop(path)
        return self.get(path)

    def close(self) -> None:
        """Close every handle."""
        for handle, _ in self._handles.values():
            handle.close()
        self._handles.clear()


_CACHE = SlideCache()


def slide_cache() -> SlideCache:
    """This process's slide cache."""
    return _CACHE


def best_level(downsamples: Sequence[float], needed: float) -> int:
    """The level with the largest downsample not above `needed` (1% tolerance), else 0."""
    limit = needed * (1 + LEVEL_TOLERANCE)
    fitting = [(ds, level) for level, ds in enumerate(downsamples) if ds <= limit]
    return max(fitting)[1] if fitting else 0


def read_plan(downsamples: Sequence[float], size_level0: int, out_size: int) -> tuple[int, int]:
    """(level, size to read there) for a patch of `size_level0` level-0 px shown at `out_size`."""
    level = best_level(downsamples, size_level0 / out_size)
    return level, max(1, round(size_level0 / downsamples[level]))


def to_rgb(rgba: np.ndarray) -> np.ndarray:
    """RGB of a (non-premultiplied) RGBA array, transparent pixels composited onto white."""
    alpha = cv2.extractChannel(rgba, 3)
    rgb = cv2.cvtColor(rgba, cv2.COLOR_RGBA2RGB)
    if cv2.minMaxLoc(alpha)[0] == 255:
        return rgb
    weight = alpha[:, :, None].astype(np.float32) / 255.0
    blended = rgb.astype(np.float32) * weight + 255.0 * (1.0 - weight)
    return np.round(blended).astype(np.uint8)


def resize(tile: np.ndarray, out_size: int) -> np.ndarray:
    """`tile` resized to out_size x out_size (area averaging when shrinking)."""
    if tile.shape[0] == out_size and tile.shape[1] == out_size:
        return tile
    shrink = tile.shape[0] > out_size
    interpolation = cv2.INTER_AREA if shrink else cv2.INTER_LINEAR
    return cv2.resize(tile, (out_size, out_size), interpolation=interpolation)


def _read_into_numpy(
    handle: openslide.OpenSlide, location: tuple[int, int], level: int, size: int
) -> np.ndarray:
    """One `openslide_read_region` call into a new (size, size) uint32 array of premultiplied ARGB.

    The C call `OpenSlide.read_region` makes, with its error check (OpenSlideError), minus the
    PIL image around the buffer.
    """
    argb = np.empty((size, size), np.uint32)
    pointer = argb.ctypes.data_as(_ARGB_POINTER)
    lowlevel._read_region(handle._osr, pointer, *location, level, size, size)
    return argb


def read_argb(path: str | Path, x: int, y: int, level: int, size: int) -> np.ndarray:
    """OpenSlide's own (size, size) uint32 premultiplied ARGB of `level` at level-0 (x, y).

    Retried once on a fresh handle; a second failure raises `TileReadError` and drops the handle.
    """
    cache = slide_cache()
    location, level, size = (int(x), int(y)), int(level), int(size)
    try:
        return _read_into_numpy(cache.get(path), location, level, size)
    except openslide.OpenSlideError:
        try:
            return _read_into_numpy(cache.reopen(path), location, level, size)
        except openslide.OpenSlideError as exc:
            cache.drop(path)
            raise TileReadError(
                f"{path}: cannot read tile x={x} y={y} level={level} size={size} "
                f"(failed twice, on a fresh handle too): {exc}"
            ) from exc


def bgra_view(argb: np.ndarray) -> np.ndarray:
    """The bytes of an ARGB array from `read_argb` as (h, w, 4) uint8 B, G, R, A, premultiplied
    (no copy); where alpha is 255 these are the pixel's own colours."""
    return argb.view(np.uint8).reshape(*argb.shape, 4)


def argb_to_rgba(argb: np.ndarray) -> np.ndarray:
    """Non-premultiplied (h, w, 4) uint8 RGBA of an ARGB array from `read_argb`, converted in
    place by openslide-python's own converter (so transparent pixels are (0, 0, 0, 0), exactly
    as `OpenSlide.read_region` gives them); `argb` is spent."""
    _convert.argb2rgba(argb)
    return argb.view(np.uint8).reshape(*argb.shape, 4)


def read_rgba(path: str | Path, x: int, y: int, level: int, size: int) -> np.ndarray:
    """The raw (size, size, 4) RGBA pixels of `level` at level-0 (x, y), retried once: the bytes
    of `np.asarray(OpenSlide.read_region(...))`, without its PIL image and copy."""
    return argb_to_rgba(read_argb(path, x, y, level, size))


def read_tile(
    path: str | Path, x: int, y: int, level: int, size: int, out_size: int | None = None
) -> np.ndarray:
    """An (out_size, out_size, 3) uint8 RGB tile: `size` px of `level` at level-0 (x, y)."""
    tile = to_rgb(read_rgba(path, x, y, level, size))
    return tile if out_size is None else resize(tile, out_size)


def read_patch(path: str | Path, x: int, y: int, size_level0: int, out_size: int) -> np.ndarray:
    """The patch of `size_level0` level-0 px at (x, y), as an (out_size, out_size, 3) array."""
    level, size = read_plan(slide_cache().get(path).level_downsamples, size_level0, out_size)
    return read_tile(path, x, y, level, size, out_size)
