"""Tiles per second of the tiling stage against a CLAM-style read loop and the raw read ceiling.

Writes one pyramidal SVS of at least 20000 x 20000 px (a synthetic H&E slide from
`reprolab.preprocess.wsi.synth`) and,
in the same run, times:

(a) `tile_slides` with N workers (segmentation, grid, a read of every patch through
    `reader.read_tile` in worker processes, coords file and QC picture), in kept tiles per
    second; the first call also starts the worker pool (printed apart), later calls reuse it;
(b) a CLAM-style single-process loop, one OpenSlide handle, `read_region(...).convert("RGB")`
    over the same kept coordinates;
(c) the raw single-process ceiling: `read_region` on one handle over the same coordinates with
    no conversion, per core.

It prints each figure, the ratio (a)/(b) against the target of 1.8x on 2 workers, and (a) per
worker against (c). Timings are printed, never asserted.

Each figure is the best of `--repeat` runs (the least disturbed by other load on the machine).

    python benchmarks/wsi_tiling.py [--size 20480] [--workers 2] [--repeat 3] [--dir PATH]
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path

import cv2
import numpy as np
import openslide

from reprolab.core.io import read_h5
from reprolab.preprocess.wsi import synth, tile_check
from reprolab.preprocess.wsi.coords_h5 import read_coords
from reprolab.preprocess.wsi.tiling import TilingOptions, tile_slides

TARGET_RATIO = 1.8


def make_slide(folder: Path, size: int) -> tuple[Path, str]:
    """Write the benchmark slide (a synthetic H&E SVS, `size` x `size` px at 0.5 µm/px) into
    `folder/slides`, or reuse the one there; returns it and where it came from."""
    slides = folder / "slides"
    slides.mkdir(parents=True, exist_ok=True)
    path = slides / "bench.svs"
    if path.is_file():
        return path, f"the existing {path}"
    spec = synth.SlideSpec(name="bench", width=size, height=size, mpp=0.5, fmt="svs", seed=0)
    synth.write_synthetic_slide(spec, path, folder / "bench_truth.h5")
    return path, "reprolab.preprocess.wsi.synth.write_synthetic_slide"


def cpu_seconds(workers: int) -> float:
    """CPU time so far of this process and of the tile-check worker pool (via psutil)."""
    import psutil

    pool = tile_check._POOLS.get(workers)
    pids = [os.getpid(), *(pool._processes if pool is not None else ())]
    return sum(sum(psutil.Process(pid).cpu_times()[:2]) for pid in pids)


def clam_loop(path: Path, coords: np.ndarray, level: int, size: int) -> float:
    """Seconds for CLAM's loop: one handle, read_region + convert('RGB') per patch."""
    start, cpu = time.perf_counter(), time.process_time()
    with openslide.OpenSlide(str(path)) as slide:
        for x, y in coords:
            np.asarray(slide.read_region((int(x), int(y)), level, (size, size)).convert("RGB"))
    return time.perf_counter() - start, time.process_time() - cpu


def raw_loop(path: Path, coords: np.ndarray, level: int, size: int) -> float:
    """Seconds for bare read_region calls on one handle (the single-core ceiling)."""
    with openslide.OpenSlide(str(path)) as slide:
        start = time.perf_counter()
        for x, y in coords:
            slide.read_region((int(x), int(y)), level, (size, size))
        return time.perf_counter() - start


def truth_coverage(truth_path: Path, slide: Path, coords: np.ndarray, size0: int) -> None:
    """Print how much of the synthetic truth (tissue, faint tissue) the kept patches cover,
    and how much a CLAM-style fixed threshold (median-blurred saturation > 8 or 20) finds."""
    truth = read_h5(truth_path)
    tissue, faint = truth["labels"] > 0, truth["faint"] > 0
    with openslide.OpenSlide(str(slide)) as handle:
        cell = handle.dimensions[0] / tissue.shape[1]
        level = handle.get_best_level_for_downsample(cell)
        thumb = np.asarray(handle.read_region((0, 0), level, handle.level_dimensions[level]))
    covered = np.zeros(tissue.shape, bool)
    for x, y in coords:
        covered[
            int(y / cell) : int((y + size0) / cell), int(x / cell) : int((x + size0) / cell)
        ] = 1
    thumb = cv2.resize(thumb[:, :, :3], tissue.shape[::-1], interpolation=cv2.INTER_AREA)
    sat = cv2.medianBlur(cv2.cvtColor(np.ascontiguousarray(thumb), cv2.COLOR_RGB2HSV)[:, :, 1], 7)
    print(
        f"truth: kept patches cover {covered[tissue].mean():.1%} of tissue cells and "
        f"{covered[faint].mean():.1%} of faint-tissue cells; CLAM sthresh=8 finds "
        f"{(sat > 8)[faint].mean():.1%} and sthresh=20 {(sat > 20)[faint].mean():.1%} of them"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=20480, help="slide side in pixels")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=None, help="keep the slide here")
    args = parser.parse_args()
    folder = args.dir or Path(tempfile.mkdtemp(prefix="wsi_tiling_bench_"))
    try:
        start = time.perf_counter()
        path, how = make_slide(folder, args.size)
        load = os.getloadavg()
        took = time.perf_counter() - start
        print(f"slide: {args.size}x{args.size} px SVS from {how} ({took:.1f} s)")
        options = TilingOptions()
        times_a, times_b, times_c, cpu_a, cpu_b = [], [], [], [], []
        for run in range(args.repeat):
            out = folder / f"out{run}"
            shutil.rmtree(out, ignore_errors=True)
            start, cpu = time.perf_counter(), cpu_seconds(args.workers)
            frame = tile_slides(path.parent, out, options, args.workers, show_progress=False)
            times_a.append(time.perf_counter() - start)
            cpu_a.append(cpu_seconds(args.workers) - cpu)
            coords, attrs = read_coords(out / "patches" / "bench.h5")
            level, size = int(attrs["patch_level"]), int(attrs["read_size"])
            wall, cpu = clam_loop(path, coords, level, size)
            times_b.append(wall)
            cpu_b.append(cpu)
            times_c.append(raw_loop(path, coords, level, size))
        n = len(coords)
        print(f"status {frame['status'].iloc[0]}, {n} kept patches, level {level}, {size} px")
        print(f"load average before the runs: {load[0]:.1f} on {os.cpu_count()} cores")
        time_b, time_c = min(times_b), min(times_c)
        if (folder / "bench_truth.h5").is_file():
            truth_coverage(folder / "bench_truth.h5", path, coords, int(attrs["patch_size_level0"]))
        warm = min(times_a[1:]) if len(times_a) > 1 else times_a[0]
        rate_a, rate_b, rate_c = n / warm, n / time_b, n / time_c
        print(
            f"(a) tile_slides, {args.workers} workers: {rate_a:8.1f} tiles/s (best warm run; "
            f"first call with pool start-up: {n / times_a[0]:.1f} tiles/s)"
        )
        print(f"(b) CLAM-style loop, 1 process:   {rate_b:8.1f} tiles/s")
        print(f"(c) raw read_region, 1 process:   {rate_c:8.1f} tiles/s")
        print(
            f"CPU cost: (a) {n / min(cpu_a[1:] or cpu_a):.1f} tiles per CPU-second (workers and "
            f"main), (b) {n / min(cpu_b):.1f}; wall ratios below are bounded by other load"
        )
        print(f"(a)/(b) = {rate_a / rate_b:.2f}x (target >= {TARGET_RATIO}x on 2 cores)")
        print(
            f"(a) per worker / (c) = {rate_a / args.workers / rate_c:.2f} of the per-core ceiling"
        )
    finally:
        if args.dir is None:
            shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
