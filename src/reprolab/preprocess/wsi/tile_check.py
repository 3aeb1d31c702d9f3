"""The tile check of the tiling stage, spread over worker processes.

Every patch the mask keeps is read once (`reader.read_rgba`, at the level and size the patch
will be read at later) to find unreadable tiles before the feature stage does, and, optionally,
to drop blank tiles (mean saturation not above the slide's own tissue threshold, so faint
tissue stays) and black ones (every channel mean under `black_threshold`, as CLAM's filter).

`TileChecker` uses a process pool (forkserver context preloading only this light module),
one per worker count and process: made on first use and started in the background while the
main process segments the first slide, then kept, so later batches in the same process (and
the handles its workers cache) start warm; the pool exits with the interpreter. Work goes out
in chunks of coordinates and comes back as boolean arrays, never as pixels. With
`workers <= 1` the checks run in the calling process. A pool whose worker died is replaced by
`restart`.
"""

from __future__ import annotations

import multiprocessing
import threading
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from reprolab.preprocess.wsi.reader import TileReadError, read_rgba, to_rgb
from reprolab.preprocess.wsi.tissue import saturation

CHUNKS_PER_WORKER = 8
CHECK_STRIDE = 2
MIN_CHUNK = 32


@dataclass(frozen=True)
class TileCheck:
    """Result of reading a chunk of tiles: which to keep and which could not be read."""

    keep: np.ndarray
    failures: tuple[tuple[int, int, str], ...]


def check_tiles(
    path: str,
    coords: np.ndarray,
    level: int,
    size: int,
    white_saturation: float,
    black_threshold: float,
    white_black: bool,
) -> TileCheck:
    """Read each tile; keep it unless unreadable or (with `white_black`) blank or black."""
    keep = np.zeros(len(coords), dtype=bool)
    failures = []
    sample = (max(1, size // CHECK_STRIDE),) * 2
    for index, (x, y) in enumerate(coords):
        try:
            rgba = read_rgba(path, int(x), int(y), level, size)
        except TileReadError as exc:
            failures.append((int(x), int(y), str(exc.__cause__)))
            continue
        if white_black:
            # Means over every CHECK_STRIDE-th pixel: the same figures, a quarter of the work.
            pixels = to_rgb(cv2.resize(rgba, sample, interpolation=cv2.INTER_NEAREST))
            if cv2.mean(saturation(pixels))[0] <= white_saturation:
                continue
            if max(cv2.mean(pixels)[:3]) < black_threshold:
                continue
        keep[index] = True
    return TileCheck(keep, tuple(failures))


def _worker_init() -> None:
    cv2.setNumThreads(1)


def _ready() -> None:
    """A no-op task that makes the pool start its workers."""


class _InlineExecutor:
    """Runs submitted calls at once in this process (workers <= 1)."""

    def submit(self, fn: Any, *args: Any) -> Future:
        future: Future = Future()
        future.set_result(fn(*args))
        return future


_POOLS: dict[int, ProcessPoolExecutor] = {}


def _warm(pool: ProcessPoolExecutor, workers: int) -> None:
    """Make `pool` start its worker processes (run in a background thread)."""
    try:
        for _ in range(workers):
            pool.submit(_ready)
    except RuntimeError:  # the interpreter is exiting: nothing left to warm up for
        pass


def _pool(workers: int) -> ProcessPoolExecutor:
    """This process's pool of `workers` processes, started (in the background) on first use."""
    if workers not in _POOLS:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload([__name__])
        pool = ProcessPoolExecutor(workers, mp_context=context, initializer=_worker_init)
        threading.Thread(target=_warm, args=(pool, workers), daemon=True).start()
        _POOLS[workers] = pool
    return _POOLS[workers]


class TileChecker:
    """Spreads tile checks over `workers` processes, or runs them inline (`workers <= 1`).

    The pool is taken (and, the first time, started) by `start`, called before the first slide
    that needs reading, so a rerun that skips every slide starts no process.
    """

    def __init__(self, workers: int) -> None:
        self.workers = workers
        self._executor: ProcessPoolExecutor | _InlineExecutor | None = None

    def start(self) -> None:
        """Get the pool going (idempotent)."""
        if self._executor is None:
            self._executor = _pool(self.workers) if self.workers > 1 else _InlineExecutor()

    def restart(self) -> None:
        """Replace a broken pool (a worker died) with a fresh one."""
        if self.workers > 1 and self.workers in _POOLS:
            _POOLS.pop(self.workers).shutdown(wait=False, cancel_futures=True)
        self._executor = None
        self.start()

    def submit(self, path: Path, coords: np.ndarray, level: int, size: int, args: tuple) -> list:
        """Submit the check of `coords` in chunks; returns the futures in order."""
        workers = max(1, self.workers)
        chunk = max(MIN_CHUNK, -(-len(coords) // (workers * CHUNKS_PER_WORKER)))
        chunks = [coords[i : i + chunk] for i in range(0, len(coords), chunk)]

        def send() -> list:
            self.start()
            return [
                self._executor.submit(check_tiles, str(path), part, level, size, *args)
                for part in chunks
            ]

        try:
            return send()
        except BrokenProcessPool:
            self.restart()
            return send()
