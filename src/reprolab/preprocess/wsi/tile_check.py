"""The tile check of the tiling stage, spread over worker processes.

Every patch the mask keeps is read once (`reader.read_argb`, at the level and size the patch
will be read at later) to find unreadable tiles before the feature stage does, and, optionally,
to drop blank tiles (mean saturation not above the slide's own tissue threshold, so faint
tissue stays) and black ones (every channel mean under `black_threshold`, as CLAM's filter).

The read is the cost (about 1.4 ms for 256 px on the benchmark's machine, nearly all inside
OpenSlide), so the check around it is kept to a few percent of it. The rule is fixed: HSV
saturation and channel means over every CHECK_STRIDE-th pixel (`cv2.resize` with INTER_NEAREST
picks them) of the tile composited onto white (`_reference_keep`). The check reaches that same
decision the cheap way whenever it can, never an approximation of it (`_opaque_keep`): on
OpenSlide's own premultiplied buffer, with no PIL image, no copy, no unpremultiplying and no
RGB conversion, for tiles whose sampled pixels are all opaque. There the premultiplied bytes
are the colours themselves (in B, G, R order, which neither the saturation nor the largest
channel mean depends on), compositing onto white changes nothing, and the means are exact sums
of integers, so the figures compared with the thresholds are the very same numbers. A tile
with a transparent sampled pixel (outside the scanned area, a slide's edge at a fractional
downsample) is unpremultiplied and goes through the reference. A sampled estimate with an
error margin (deciding most tiles from a sparse subsample) was not chosen: it would only be
right with high probability, and the exact check left costs about 2 % of a read.

`TileChecker` uses a shared process pool (forkserver context preloading only this light
module), one per worker count and process: made on first use and started in the background
while the main process segments the first slide, then kept, so later batches in the same
process (and the handles its workers cache) start warm; the pool exits with the interpreter,
and its workers end with the process even when it is killed (`core.parent_death`).
Work goes out in chunks of coordinates, one `CheckBatch` per slide, and comes back as boolean
arrays, never as pixels. A slide is cut into CHUNKS_PER_WORKER chunks per worker (at least
MIN_CHUNK tiles each): the workers finish a slide at most one chunk apart, so small chunks keep
that idle tail to a sliver of the slide, while a chunk's pickling and queueing (about 0.2 ms)
stays small next to its 32 or more tile reads. With `workers <= 1` the checks run in the
calling process.

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
from reprolab.preprocess.wsi.reader import (
    TileReadError,
    argb_to_rgba,
    bgra_view,
    read_argb,
    to_rgb,
)
from reprolab.preprocess.wsi.tissue import saturation

CHUNKS_PER_WORKER = 32
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


def _reference_keep(
    rgba: np.ndarray, sample: tuple[int, int], white_saturation: float, black_threshold: float
) -> bool:
    """The rule itself, on non-premultiplied RGBA: keep unless the mean saturation of every
    CHECK_STRIDE-th pixel, composited onto white, is not above `white_saturation` (blank) or all
    its channel means are under `black_threshold` (black)."""
    pixels = to_rgb(cv2.resize(rgba, sample, interpolation=cv2.INTER_NEAREST))
    if cv2.mean(saturation(pixels))[0] <= white_saturation:
        return False
    return not max(cv2.mean(pixels)[:3]) < black_threshold


def _opaque_keep(
    bgra: np.ndarray, sample: tuple[int, int], white_saturation: float, black_threshold: float
) -> bool | None:
    """`_reference_keep`'s decision from premultiplied BGRA bytes, or None when a sampled pixel
    is not opaque (the reference must decide).

    The alpha mean is 255.0 only when every sampled alpha is 255 (one short of that sum is
    1/N below it, far above rounding). Then these are the pixels the reference sees, in B, G, R
    order; saturation is symmetric in the three channels and OpenCV's HSV conversion ignores a
    fourth, and cv2.mean sums integers exactly, so both figures equal the reference's.
    """
    pixels = cv2.resize(bgra, sample, interpolation=cv2.INTER_NEAREST)
    means = cv2.mean(pixels)
    if means[3] != 255.0:
        return None
    if cv2.mean(cv2.cvtColor(pixels, cv2.COLOR_BGR2HSV))[1] <= white_saturation:
        return False
    return not max(means[:3]) < black_threshold


def keep_tile(argb: np.ndarray, white_saturation: float, black_threshold: float) -> bool:
    """Whether a tile read by `read_argb` is neither blank nor black: `_opaque_keep` when its
    sampled pixels are opaque, else `_reference_keep` on the unpremultiplied tile (which
    spends `argb`)."""
    sample = (max(1, argb.shape[1] // CHECK_STRIDE), max(1, argb.shape[0] // CHECK_STRIDE))
    keep = _opaque_keep(bgra_view(argb), sample, white_saturation, black_threshold)
    if keep is None:
        keep = _reference_keep(argb_to_rgba(argb), sample, white_saturation, black_threshold)
    return keep


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
    for index, (x, y) in enumerate(coords):
        try:
            argb = read_argb(path, int(x), int(y), level, size)
        except TileReadError as exc:
            failures.append((int(x), int(y), str(exc.__cause__)))
            continue
        keep[index] = not white_black or keep_tile(argb, white_saturation, black_threshold)
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
    """Make `pool` start its worker processes (run in a background thread).

    A pool that broke, or that `_discard` shut down while this thread was still starting its
    workers (its pipes then closed: OSError), or an interpreter on its way out (RuntimeError,
    BrokenProcessPool among them) needs no warming: the error is dropped.
    """
    try:
        for _ in range(workers):
            pool.submit(_ready)
    except (RuntimeError, OSError):
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
