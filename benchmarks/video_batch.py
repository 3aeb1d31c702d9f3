"""Many small videos through `extract_frames`: reused workers against a process per video.

Makes a folder of `--videos` short clips (64x48, 25 fps, 24 to 48 frames each, H.264 4:2:0
with 2 B-frames and a GOP of 12, written by `encode.write_mp4`, each its own moving pattern)
plus one empty file and one text file named .mp4, then times `extract_frames` on it (8
uniformly sampled frames, native size, `--workers` workers) in two modes, in the same run:

(new)  the stage as it is: long-lived worker processes, each serving video after video;
(old)  the baseline, the stage as it was: `one_process_per_video` below replaces the stage's
       job driver (`frames._results`) with one that starts a fresh forkserver child per video,
       at most `--workers` at once, each running `frames.process_video` once and exiting.

Target: new >= 3x old's videos/s. Every output of the two modes (clips.h5, index.csv,
process_list.csv, probe/*.json) is compared byte for byte and the result printed. One untimed
run of each mode comes first (it starts the forkserver); the timed runs alternate, `--repeat`
times each, and each figure is the median wall time (the machine may be shared). Timings are
printed, never asserted.

    python benchmarks/video_batch.py [--videos 100] [--workers 2] [--repeat 3] [--dir PATH]
"""

from __future__ import annotations

import argparse
import multiprocessing.connection
import os
import statistics
import time
from collections import deque
from collections.abc import Iterator
from contextlib import AbstractContextManager, nullcontext
from pathlib import Path
from typing import Any
from unittest import mock

import numpy as np
from scratch import work_folder  # benchmarks/scratch.py

from reprolab.core.parent_death import call_exiting_with_parent
from reprolab.preprocess.video import frames
from reprolab.preprocess.video.encode import write_mp4
from reprolab.preprocess.video.frames import FrameOptions, extract_frames

TARGET = 3.0
HEIGHT, WIDTH, FPS = 48, 64, 25
OPTIONS = FrameOptions(num_frames=8)


def clip(seed: int) -> np.ndarray:
    """uint8 [T, 48, 64, 3] frames, 24 to 48 of them: a gradient drifting at a speed of its
    own and a white square crossing it, so every clip and frame differs."""
    count = 24 + seed % 25
    ys, xs = np.mgrid[0:HEIGHT, 0:WIDTH]
    out = np.zeros((count, HEIGHT, WIDTH, 3), dtype=np.uint8)
    for t in range(count):
        out[t, ..., 0] = (xs * 4 + t * (1 + seed % 7)) % 256
        out[t, ..., 1] = (ys * 5 + seed * 13) % 256
        x = (3 * t + seed) % (WIDTH - 8)
        out[t, 20:28, x : x + 8] = 255
    return out


def make_corpus(folder: Path, videos: int) -> Path:
    """Write (or reuse) the clips and the two bad files in `folder/videos`; that folder."""
    corpus = folder / "videos"
    corpus.mkdir(parents=True, exist_ok=True)
    for seed in range(videos):
        path = corpus / f"clip_{seed:04d}.mp4"
        if not path.is_file():
            write_mp4(path, clip(seed), FPS, crf=18, gop=12, pix_fmt="yuv420p", bframes=2)
    (corpus / "empty.mp4").write_bytes(b"")
    (corpus / "notes.mp4").write_text("not a video\n")
    return corpus


def _send_result(sender: Any, path: Path, probe_path: Path, options: FrameOptions) -> None:
    """Body of a baseline child: process one video, send its result back, exit."""
    sender.send(frames.process_video(path, probe_path, options))
    sender.close()


def one_process_per_video(
    jobs: list[tuple[Path, Path]], options: FrameOptions, workers: int
) -> Iterator[tuple[int, dict]]:
    """The BASELINE job driver, the stage's own before workers were reused (same contract as
    `frames._results`): (job number, result) as children finish, a fresh child per video and
    at most `workers` at a time; a child past its deadline is killed and gives a timeout row."""
    context = frames._context()
    pending = deque(enumerate(jobs))
    running: dict[Any, tuple[int, Any, float]] = {}
    try:
        while pending or running:
            while pending and len(running) < workers:
                number, (path, probe_path) = pending.popleft()
                receiver, sender = context.Pipe(duplex=False)
                child = context.Process(
                    target=call_exiting_with_parent,
                    args=(_send_result, sender, path, probe_path, options),
                    daemon=True,
                )
                child.start()
                sender.close()
                running[receiver] = (number, child, time.monotonic() + options.timeout_s)
            wait = max(0.0, min(deadline for _, _, deadline in running.values()) - time.monotonic())
            for receiver in multiprocessing.connection.wait(list(running), timeout=wait):
                number, child, _ = running.pop(receiver)
                try:
                    result = receiver.recv()
                except EOFError:
                    child.join()
                    result = {"row": frames._died_row(jobs[number][0], child.exitcode)}
                receiver.close()
                child.join()
                yield number, result
            now = time.monotonic()
            for receiver, (number, child, deadline) in list(running.items()):
                if now >= deadline:
                    child.kill()
                    child.join()
                    receiver.close()
                    del running[receiver]
                    yield number, {"row": frames._timeout_row(*jobs[number], options.timeout_s)}
    finally:
        for receiver, (_, child, _) in running.items():
            child.kill()
            child.join()
            receiver.close()


def mode(name: str) -> AbstractContextManager:
    """The stage as it is ("new"), or with the baseline driver patched in ("old")."""
    if name == "old":
        return mock.patch.object(frames, "_results", one_process_per_video)
    return nullcontext()


def timed_run(name: str, corpus: Path, out: Path, workers: int) -> float:
    """Wall seconds of one `extract_frames` of `corpus` into `out` in mode `name`."""
    with mode(name):
        start = time.perf_counter()
        extract_frames(corpus, out, OPTIONS, workers=workers, show_progress=False)
        return time.perf_counter() - start


def outputs(out_dir: Path) -> dict[str, bytes]:
    """Relative path -> bytes of every file under `out_dir`."""
    return {str(p.relative_to(out_dir)): p.read_bytes() for p in out_dir.rglob("*") if p.is_file()}


def compare_outputs(old: Path, new: Path) -> str:
    """Whether the two output folders hold the same files with the same bytes, in words."""
    before, after = outputs(old), outputs(new)
    differing = sorted(n for n in before.keys() | after.keys() if before.get(n) != after.get(n))
    probes = sum(name.startswith("probe/") for name in after)
    if differing:
        return f"NO, {len(differing)} of {len(after)} files differ: {differing[:5]}"
    return f"yes, all {len(after)} files (clips.h5, index.csv, process_list.csv, {probes} probes)"


def seconds(walls: list[float]) -> str:
    """Run times for printing, in run order."""
    return ", ".join(f"{wall:.2f}" for wall in walls) + " s"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--videos", type=int, default=100)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=None, help="keep the videos and outputs here")
    args = parser.parse_args()
    with work_folder(args.dir, "video_batch_bench_") as folder:
        corpus = make_corpus(folder, args.videos)
        files = len(frames.list_videos(corpus, OPTIONS.extensions))
        for name in ("old", "new"):
            timed_run(name, corpus, folder / f"warmup_{name}", args.workers)
        walls: dict[str, list[float]] = {"old": [], "new": []}
        for _ in range(args.repeat):
            for name in walls:
                walls[name].append(timed_run(name, corpus, folder / name, args.workers))
        print(
            f"corpus: {args.videos} clips of {WIDTH}x{HEIGHT}, 24-48 frames, + 2 bad files "
            f"= {files} files; {OPTIONS.num_frames} frames per clip, {args.workers} workers; "
            f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; median of "
            f"{args.repeat} runs"
        )
        rate = {name: files / statistics.median(w) for name, w in walls.items()}
        print(f"(new) reused workers:              {rate['new']:7.1f} videos/s "
              f"(runs {seconds(walls['new'])})")  # fmt: skip
        print(f"(old) BASELINE, process per video: {rate['old']:7.1f} videos/s "
              f"(runs {seconds(walls['old'])})")  # fmt: skip
        print(f"ratio {rate['new'] / rate['old']:.2f}x (target >= {TARGET}x)")
        print(f"outputs byte-identical: {compare_outputs(folder / 'old', folder / 'new')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
