"""Frame-exact clip reading against plain PyAV, in the same run, on a long-GOP H.264 file.

Makes one video with the ffmpeg of the imageio-ffmpeg wheel (lavfi testsrc2, 320x240, 30 fps,
`--frames` frames, GOP 250, 3 B-frames, yuv420p: what a camera or a web video looks like) and
times:

(a) uniform sampling of 16 frames: `read_frames` (index from the packets, forward decode,
    seeking only across keyframes) against the usual PyAV loop that, for each frame, seeks to
    its timestamp (`container.seek(pts, stream=...)` lands on the keyframe before it) and
    decodes forward to the first frame at or after it; target >= 3x;
(b) a full sequential decode: `decode_all` against PyAV's own
    `for frame in container.decode(video=0): frame.to_ndarray(format="rgb24")`; target >= 0.9x.

Both sides are checked against the reference frames (a full sequential decode) and the result
is printed. The two sides of each comparison run alternately, `--repeat` times each, and each
figure is the median (wall and CPU time of this process: the machine may be shared). Timings
are printed, never asserted.

    python benchmarks/video_frames.py [--frames 1800] [--repeat 3] [--dir PATH]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import av
import imageio_ffmpeg
import numpy as np

from reprolab.preprocess.video.decode import decode_all, read_frames
from reprolab.preprocess.video.probe import probe_video
from reprolab.preprocess.video.sampling import sample_indices

TARGET_SAMPLED = 3.0
TARGET_SEQUENTIAL = 0.9
FPS = 30


def make_video(folder: Path, frames: int) -> Path:
    """Write (or reuse) the benchmark video in `folder`."""
    path = folder / f"long_gop_{frames}.mp4"
    if not path.is_file():
        source = f"testsrc2=size=320x240:rate={FPS}"
        subprocess.run(
            [imageio_ffmpeg.get_ffmpeg_exe(), "-loglevel", "error", "-y", "-f", "lavfi",
             "-i", source, "-frames:v", str(frames), "-c:v", "libx264", "-pix_fmt", "yuv420p",
             "-g", "250", "-keyint_min", "250", "-sc_threshold", "0", "-bf", "3", str(path)],
            check=True,
        )  # fmt: skip
    return path


def naive_seek_loop(path: Path, indices: np.ndarray) -> np.ndarray:
    """The usual PyAV recipe: per frame, seek to its timestamp and decode up to it."""
    out = []
    with av.open(str(path)) as container:
        stream = container.streams.video[0]
        for index in indices:
            target = round(int(index) / FPS / stream.time_base)
            container.seek(target, stream=stream)
            for frame in container.decode(stream):
                if frame.pts >= target:
                    out.append(frame.to_ndarray(format="rgb24"))
                    break
    return np.stack(out)


def plain_decode(path: Path) -> np.ndarray:
    """PyAV's own full decode loop (its default threading)."""
    with av.open(str(path)) as container:
        return np.stack([frame.to_ndarray(format="rgb24") for frame in container.decode(video=0)])


def compare(repeat: int, ours, theirs, *args) -> tuple[dict, dict]:
    """Run `ours(*args)` and `theirs(*args)` alternately `repeat` times; per side the median
    and best wall seconds, the median CPU seconds (this process) and the last result."""
    runs = {"ours": ([], [], None), "theirs": ([], [], None)}
    for _ in range(repeat):
        for name, function in (("ours", ours), ("theirs", theirs)):
            walls, cpus, _ = runs[name]
            wall, cpu = time.perf_counter(), time.process_time()
            result = function(*args)
            walls.append(time.perf_counter() - wall)
            cpus.append(time.process_time() - cpu)
            runs[name] = (walls, cpus, result)
    return tuple(
        {"wall": statistics.median(w), "best": min(w), "cpu": statistics.median(c), "result": r}
        for w, c, r in runs.values()
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=1800)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=None, help="keep the video here")
    args = parser.parse_args()
    folder = args.dir or Path(tempfile.mkdtemp(prefix="video_frames_bench_"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        path = make_video(folder, args.frames)
        manifest = probe_video(path)
        print(
            f"video: {manifest['width']}x{manifest['height']}, {manifest['frame_count']} "
            f"frames, GOP {manifest['gop']}, B-frames {manifest['has_b_frames']}, "
            f"{path.stat().st_size / 1e6:.1f} MB; load average {os.getloadavg()[0]:.1f} on "
            f"{os.cpu_count()} cores; median of {args.repeat} runs"
        )
        reference = decode_all(path).frames
        indices = sample_indices(manifest["frame_count"], manifest["fps"], 16, "uniform")

        ours, naive = compare(args.repeat, read_frames, naive_seek_loop, path, indices)
        exact = np.array_equal(ours["result"].frames, reference[indices])
        print(f"(a) read_frames, 16 uniform frames: {ours['wall']:.3f} s "
              f"(CPU {ours['cpu']:.3f} s), exact: {exact}")  # fmt: skip
        exact = np.array_equal(naive["result"], reference[indices])
        print(f"    naive seek-per-frame loop:      {naive['wall']:.3f} s "
              f"(CPU {naive['cpu']:.3f} s), exact: {exact}")  # fmt: skip
        print(f"    ratio {naive['wall'] / ours['wall']:.2f}x faster (best runs "
              f"{naive['best'] / ours['best']:.2f}x, CPU time {naive['cpu'] / ours['cpu']:.2f}x; "
              f"target >= {TARGET_SAMPLED}x)")  # fmt: skip

        ours, plain = compare(args.repeat, decode_all, plain_decode, path)
        count = len(plain["result"])
        same = np.array_equal(ours["result"].frames, plain["result"])
        print(f"(b) decode_all, all {count} frames: {ours['wall']:.3f} s "
              f"(CPU {ours['cpu']:.3f} s), equals PyAV's loop: {same}")  # fmt: skip
        print(f"    PyAV decode loop:               {plain['wall']:.3f} s "
              f"(CPU {plain['cpu']:.3f} s)")  # fmt: skip
        print(f"    ratio {plain['wall'] / ours['wall']:.2f}x of PyAV's speed (best runs "
              f"{plain['best'] / ours['best']:.2f}x, CPU time {plain['cpu'] / ours['cpu']:.2f}x; "
              f"target >= {TARGET_SEQUENTIAL}x)")  # fmt: skip
    finally:
        if args.dir is None:
            shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
