"""Frame-exact clip reading against plain PyAV and TorchCodec, in the same run, on a long-GOP file.

Makes one video with the ffmpeg of the imageio-ffmpeg wheel (lavfi testsrc2, 320x240, 30 fps,
`--frames` frames, GOP 250, 3 B-frames, yuv420p: what a camera or a web video looks like) and
times:

(a) uniform sampling of 16 frames: `read_frames` on one thread and on `--threads` threads
    (keyframe intervals read concurrently) against the usual PyAV loop that, for each frame,
    seeks to its timestamp (`container.seek(pts, stream=...)` lands on the keyframe before it)
    and decodes forward to the first frame at or after it (target >= 3x in wall time), and
    against TorchCodec's exact mode (`VideoDecoder(seek_mode="exact").get_frames_at`, the
    anchor people would pick; target: no slower);
(b) a full sequential decode: `decode_all` against PyAV's own
    `for frame in container.decode(video=0): frame.to_ndarray(format="rgb24")`; target >= 0.9x.

Every side is checked against the reference frames (a full sequential decode): equal, or, for
TorchCodec (its own YUV to RGB conversion), the largest pixel difference. TorchCodec is a
benchmark-only dependency: `pip install -r benchmarks/requirements.txt`, with FFmpeg's shared
libraries from Debian (`apt-get install libavcodec59 libavformat59 libavutil57 libswscale6
libswresample4 libavdevice59 libavfilter8`); without it the benchmark says why and goes on.
The sides of each comparison run alternately, `--repeat` times each, and each figure is the
median (wall time, and CPU time of this process over all its threads: the machine may be
shared); frames per CPU-second are printed beside the wall times. Timings are printed, never
asserted.

    python benchmarks/video_frames.py [--frames 1800] [--repeat 5] [--threads 2] [--dir PATH]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import av
import imageio_ffmpeg
import numpy as np
from scratch import work_folder  # benchmarks/scratch.py

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


def decode_all_frames(path: Path) -> np.ndarray:
    """The frames of `decode_all` (the side of (b) that is ours)."""
    return decode_all(path).frames


def torchcodec_reader() -> tuple[Callable | None, str]:
    """TorchCodec's exact-mode frame reader (frames as uint8 [T, H, W, 3]) and its version, or
    None and why it cannot run here."""
    try:
        import torchcodec
        from torchcodec.decoders import VideoDecoder
    except (ImportError, OSError, RuntimeError) as exc:
        return None, f"{type(exc).__name__}: {str(exc).splitlines()[0]}"

    def read(path: Path, indices: np.ndarray) -> np.ndarray:
        decoder = VideoDecoder(str(path), seek_mode="exact")
        batch = decoder.get_frames_at(indices=[int(i) for i in indices])
        return batch.data.permute(0, 2, 3, 1).numpy()

    return read, torchcodec.__version__


def compare(repeat: int, sides: dict[str, Callable], *args: Any) -> dict[str, dict]:
    """Run every side on `args` in turn, `repeat` rounds; per side the median and best wall
    seconds, the median CPU seconds (this process, all threads) and the last result."""
    runs: dict[str, dict] = {name: {"walls": [], "cpus": []} for name in sides}
    for _ in range(repeat):
        for name, function in sides.items():
            wall, cpu = time.perf_counter(), time.process_time()
            runs[name]["result"] = function(*args)
            runs[name]["walls"].append(time.perf_counter() - wall)
            runs[name]["cpus"].append(time.process_time() - cpu)
    return {
        name: {
            "wall": statistics.median(run["walls"]),
            "best": min(run["walls"]),
            "cpu": statistics.median(run["cpus"]),
            "result": run["result"],
        }
        for name, run in runs.items()
    }


def pixels(frames: np.ndarray, reference: np.ndarray) -> str:
    """'exact', or how far `frames` are from `reference` (largest difference, share equal)."""
    if frames.shape != reference.shape:
        return f"shape {frames.shape} against {reference.shape}"
    if np.array_equal(frames, reference):
        return "exact"
    difference = np.abs(frames.astype(np.int16) - reference.astype(np.int16))
    return (
        f"not exact: largest difference {int(difference.max())}, mean {difference.mean():.2f}, "
        f"{(difference == 0).mean():.1%} of values equal"
    )


def report(label: str, side: dict, frames: int, reference: np.ndarray) -> None:
    """One line: wall and CPU seconds, frames per CPU-second and the pixel check."""
    print(
        f"    {label:<34} {side['wall']:.3f} s wall (best {side['best']:.3f}), CPU "
        f"{side['cpu']:.3f} s = {frames / side['cpu']:.0f} frames per CPU-second; "
        f"{pixels(side['result'], reference)}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=1800)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--threads", type=int, default=2, help="read_frames threads")
    parser.add_argument("--dir", type=Path, default=None, help="keep the video here")
    args = parser.parse_args()
    with work_folder(args.dir, "video_frames_bench_") as folder:
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
        wanted = reference[indices]
        torchcodec_read, version = torchcodec_reader()
        sides = {
            "read_frames, 1 thread": lambda p, i: read_frames(p, i).frames,
            f"read_frames, {args.threads} threads": lambda p, i: (
                read_frames(p, i, threads=args.threads).frames
            ),
            "naive seek-per-frame loop": naive_seek_loop,
        }
        if torchcodec_read is not None:
            sides[f"TorchCodec {version}, exact mode"] = torchcodec_read
        sampled = compare(args.repeat, sides, path, indices)
        print(f"(a) 16 uniform frames of {len(reference)}:")
        for label, side in sampled.items():
            report(label, side, len(indices), wanted)
        if torchcodec_read is None:
            print(f"    TorchCodec: cannot run here ({version})")
        naive = sampled["naive seek-per-frame loop"]
        for label, side in sampled.items():
            if label.startswith("read_frames"):
                print(
                    f"    {label}: {naive['wall'] / side['wall']:.2f}x the naive loop in wall "
                    f"time (best runs {naive['best'] / side['best']:.2f}x, CPU time "
                    f"{naive['cpu'] / side['cpu']:.2f}x; target >= {TARGET_SAMPLED}x)"
                )
                if torchcodec_read is not None:
                    anchor = sampled[f"TorchCodec {version}, exact mode"]
                    print(
                        f"    {label}: {anchor['wall'] / side['wall']:.2f}x TorchCodec's "
                        f"speed in wall time (CPU time {anchor['cpu'] / side['cpu']:.2f}x; "
                        f"target >= 1x)"
                    )

        full = compare(
            args.repeat, {"decode_all": decode_all_frames, "PyAV decode loop": plain_decode}, path
        )
        print(f"(b) all {len(reference)} frames:")
        for label, side in full.items():
            report(label, side, len(reference), reference)
        ours, plain = full["decode_all"], full["PyAV decode loop"]
        print(
            f"    ratio {plain['wall'] / ours['wall']:.2f}x of PyAV's speed (best runs "
            f"{plain['best'] / ours['best']:.2f}x, CPU time {plain['cpu'] / ours['cpu']:.2f}x; "
            f"target >= {TARGET_SEQUENTIAL}x)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
