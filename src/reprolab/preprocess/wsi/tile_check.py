"""The tile check of the tiling stage, spread over worker processes.

Every patch the mask keeps is read once (`reader.read_rgba`, at the level and size the patch
will be read at later) to find unreadable tiles before the feature stage does, and, optionally,
to drop blank tiles (mean saturation not above the slide's own tissue threshold, so faint
tissue stays) and black ones (every channel mean under `black_threshold`, as CLAM's filter).

`TileChecker` uses a shared process pool (forkserver context preloading only this light
module), one per worker count and process: made on first use and started in the background
while the main process segments the first slide, then kept, so later batches in the same
process (and the handles its workers cache) start warm; the pool exits with the interpreter,
and its workers end with the process even when it is killed (`core.parent_death`).
Work goes out in chunks of coordinates, one `CheckBatch` per slide, and comes back as boolean
arrays, never as pixels. With `workers <= 1` the checks run in the calling process.

A worker that dies breaks its whole pool: every batch on it fails with `BrokenProcessPool`,
whichever slide the dead worker was reading. So a batch lost that way is "not done", never a
failure of its slide: the broken pool is dropped from the cache the moment it is seen broken
(the next submission gets a fresh one) and the lost batch is rerun alone on a pool of its
own, where a break can only come from that slide (or from outside). Only a slide whose worker
dies on every such solo run fails, with `WorkerDiedError` naming it.
"""

from __future__ import annotations

import multiprocessing
import threading
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from reprolab.core.parent_death import exit_with_parent
from reprolab.preprocess.wsi.reader import TileReadError, read_rgba, to_rgb
from reprolab.preprocess.wsi.tissue import saturation

CHUNKS_PER_WORKER = 8
CHECK_STRIDE = 2
MIN_CHUNK = 32
SOLO_RUNS = 2


@dataclass(frozen=True)
class TileCheck:
    """Result of reading a chunk of tiles: which to keep and which could not be read."""

    keep: np.ndarray
    failures: tuple[tuple[int, int, str], ...]


class WorkerDiedError(RuntimeError):
    """A slide's tile-reading worker died on every run of its check on a pool of its own."""


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
    """Set up a pool worker: one OpenCV thread, and an end with the process that made the pool
    (`parent_death`: a killed `wsi tile` leaves no worker, forkserver or resource tracker)."""
    exit_with_parent()
    cv2.setNumThreads(1)


def _ready() -> None:
    """A no-op task that makes the pool start its workers."""


class _InlineExecutor(Executor):
    """Runs submitted calls at once in this process (workers <= 1)."""

    def submit(self, fn: Any, /, *args: Any, **kwargs: Any) -> Future:
        future: Future = Future()
        future.set_result(fn(*args, **kwargs))
        return future


@dataclass
class CheckBatch:
    """One slide's tile check: its chunks of coordinates, the executor they went to, and
    their futures in chunk order (None when that executor refused them, being broken)."""

    path: Path
    chunks: list[np.ndarray]
    params: tuple[Any, ...]
    executor: Executor
    futures: list[Future] | None


_POOLS: dict[int, ProcessPoolExecutor] = {}


def _warm(pool: ProcessPoolExecutor, workers: int) -> None:
    """Make `pool` start its worker processes (run in a background thread)."""
    try:
        for _ in range(workers):
            pool.submit(_ready)
    except RuntimeError:  # broken (BrokenProcessPool) or the interpreter is exiting: no use
        pass


def _new_pool(workers: int) -> ProcessPoolExecutor:
    """A pool of `workers` forkserver processes whose server preloads only this module."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([__name__])
    return ProcessPoolExecutor(workers, mp_context=context, initializer=_worker_init)


def _pool(workers: int) -> ProcessPoolExecutor:
    """This process's shared pool of `workers` processes, started (in the background) on first
    use and after `_discard` dropped a broken one."""
    if workers not in _POOLS:
        pool = _new_pool(workers)
        threading.Thread(target=_warm, args=(pool, workers), daemon=True).start()
        _POOLS[workers] = pool
    return _POOLS[workers]


def _discard(workers: int, broken: Executor) -> None:
    """Drop the pool `broken` from the cache, so the next submission makes a fresh one.

    Only that very pool is dropped: when it was already replaced, the cached pool is a newer,
    working one that may hold other slides' work, and it is left alone. A broken pool holds no
    live work (its pending futures have all failed), so shutting it down cancels nothing.
    """
    if _POOLS.get(workers) is broken:
        del _POOLS[workers]
        broken.shutdown(wait=False)


def _send(
    executor: Executor, path: Path, chunks: list[np.ndarray], params: tuple
) -> list[Future] | None:
    """Submit the check of every chunk to `executor`; None when it is (or becomes) broken."""
    try:
        return [executor.submit(check_tiles, str(path), part, *params) for part in chunks]
    except BrokenProcessPool:
        return None


def _gather(futures: list[Future] | None) -> list[TileCheck] | None:
    """The results of `futures` in order, or None when their pool broke before all came back.

    Results that did come back from a pool that then broke are dropped with the rest: the
    whole slide reruns, which keeps one path for a rare event.
    """
    if futures is None:
        return None
    try:
        return [future.result() for future in futures]
    except BrokenProcessPool:
        return None


class TileChecker:
    """Spreads tile checks over `workers` processes, or runs them inline (`workers <= 1`).

    The shared pool is taken (and, the first time, started) by `start`, called before the
    first slide that needs reading, so a rerun that skips every slide starts no process.
    """

    def __init__(self, workers: int) -> None:
        self.workers = workers

    def start(self) -> None:
        """Get the shared pool going (idempotent; nothing to start inline)."""
        if self.workers > 1:
            _pool(self.workers)

    def _executor(self) -> Executor:
        """The executor new work goes to: the shared pool, or inline for `workers <= 1`."""
        return _pool(self.workers) if self.workers > 1 else _InlineExecutor()

    def submit(
        self, path: Path, coords: np.ndarray, level: int, size: int, args: tuple
    ) -> CheckBatch:
        """Submit the check of `coords` in chunks to the shared pool; `collect` gives the result.

        A pool that refuses the work is broken: it is dropped at once, and the batch is left
        for `collect` to rerun alone (it is not resubmitted to the shared pool here, so a slide
        that breaks the pool while it is being submitted cannot loop).
        """
        workers = max(1, self.workers)
        chunk = max(MIN_CHUNK, -(-len(coords) // (workers * CHUNKS_PER_WORKER)))
        chunks = [coords[i : i + chunk] for i in range(0, len(coords), chunk)]
        params = (level, size, *args)
        executor = self._executor()
        futures = _send(executor, path, chunks, params)
        if futures is None:
            _discard(self.workers, executor)
        return CheckBatch(path, chunks, params, executor, futures)

    def collect(self, batch: CheckBatch) -> list[TileCheck]:
        """The checks of `batch`, one per chunk in order.

        A batch lost to a broken pool is not done: the pool is dropped (if still cached) and
        the batch reruns alone (`_rerun_alone`), which raises `WorkerDiedError` for a slide
        whose worker dies every time.
        """
        checks = _gather(batch.futures)
        if checks is None:
            _discard(self.workers, batch.executor)
            checks = self._rerun_alone(batch)
        return checks

    def _rerun_alone(self, batch: CheckBatch) -> list[TileCheck]:
        """Run `batch` on a fresh pool of its own, up to SOLO_RUNS times.

        Alone on its pool, a slide's check breaks it only by crashing a worker itself (or by
        an outside kill, hence more than one run), so the slide is given up only when every
        run breaks.
        """
        for _ in range(SOLO_RUNS):
            with _new_pool(self.workers) as pool:
                checks = _gather(_send(pool, batch.path, batch.chunks, batch.params))
            if checks is not None:
                return checks
        raise WorkerDiedError(
            f"{batch.path.name}: its tile-reading worker process died on each of {SOLO_RUNS} "
            "runs of this slide alone on a fresh pool (the slide itself likely crashes the reader)"
        )
