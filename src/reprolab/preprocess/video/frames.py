"""Extract fixed-length frame clips from a folder of videos: `clips.h5`, an index, a process list.

`extract_frames(videos_dir, out_dir, options, workers)` is what `reprolab video frames` and the
workflow rule call. For each video (files with one of `options.extensions`, sorted by name),
in a worker process:

1. probe it and write `probe/<stem>.json` (`probe.probe_video`) before decoding anything;
2. pick `num_frames` indices (`sampling.sample_indices`; `fps` sampling uses the frames' real
   timestamps, so it is right on variable-frame-rate files);
3. decode exactly those frames (`decode.read_frames`, frames in the coded orientation; the
   rotation is recorded in the probe and the process list) and resize them
   (`resize.resize_clip`) to `size`, or keep the native size.

Outputs in `out_dir`: `clips.h5` with `clips` uint8 [N, T, H, W, 3] RGB (one chunk per clip),
`frame_indices` int64 [N, T], `pts_seconds` float64 [N, T] and `videos` [N], rows in name order
and only for processed videos, the options as JSON in the root attribute `options`;
`index.csv` (video, row, frame_indices, timestamps as space-separated lists) and
`process_list.csv`, one row per input file with its status:

- `processed`; `failed_open` (empty, not a media file, no video stream, or the same stem as an
  earlier file); `failed_decode` (truncated, decoding stopped before a requested frame, or the
  worker process died on the video); `too_short` (the clip does not fit and `short_policy` is
  `error`); `size_mismatch` (native size asked and the video's size differs from the first
  processed video's); `timeout` (the worker spent more than `timeout_s` on the video and was
  killed: a hung read cannot stall the batch).

Workers: up to `workers` long-lived child processes, started from a forkserver that has PyAV,
NumPy and OpenCV imported, each serve video after video: the parent sends one video at a time
down a worker's own pipe and waits on the pipes of the busy workers and on their deadlines
(`timeout_s` from the moment the video was sent). A worker past its deadline is killed and its
video gets `timeout`; a worker that dies (a crash in a native library, `os._exit`) gives its
video `failed_decode` ("the decoding process died (exit code N)"); either is replaced by a
fresh worker only when videos are left. Starting a process per video cost more than decoding a
small one. Workers end with the batch, and with this process even when it is killed
(`core.parent_death`). Results are written in name order whatever order they finish in. Reruns
redo every video and replace every output (each written atomically, and the same inputs and
options give the same bytes); probe files of videos that are no longer in the folder are left
alone.
"""

from __future__ import annotations

import json
import multiprocessing
import multiprocessing.connection
import time
import traceback
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, fields
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from pathlib import Path
from typing import Any

import h5py
import numpy as np
import pandas as pd

from reprolab.core.arguments import (
    MAX_WORKERS,
    bounded_int,
    input_folder,
    output_folder,
    positive_number,
)
from reprolab.core.io import atomic_path, read_json, write_csv, write_json
from reprolab.core.parent_death import call_exiting_with_parent
from reprolab.core.progress import progress
from reprolab.preprocess.video.decode import read_frames
from reprolab.preprocess.video.probe import VideoDecodeError, VideoError, probe_and_index
from reprolab.preprocess.video.resize import RESIZE_MODES, resize_clip
from reprolab.preprocess.video.sampling import (
    SHORT_POLICIES,
    STRATEGIES,
    ClipTooShortError,
    sample_indices,
)

VIDEO_EXTENSIONS = (".mp4", ".m4v", ".mov", ".mkv", ".webm", ".avi")
STATUSES = (
    "processed",
    "failed_open",
    "failed_decode",
    "too_short",
    "size_mismatch",
    "timeout",
)
COLUMNS = [
    "video",
    "status",
    "message",
    "row",
    "frame_count",
    "fps",
    "duration_s",
    "width",
    "height",
    "variable_frame_rate",
    "rotation",
]
_PRELOAD = ["av", "numpy", "cv2", "reprolab.preprocess.video.frames"]
MAX_NUM_FRAMES = 1024
"""Most frames per clip: a clip is held in memory and written as one chunk, and no video model
of the studies reads more than a few dozen frames; a larger request is a typo, refused before
anything is written (a 12-frame clip asked for 100,000 frames would otherwise repeat its last
frame into gigabytes)."""
MAX_STRIDE = 10_000
"""Largest dense-sampling stride (frames between samples)."""
MAX_SIDE = 4096
"""Largest resized clip side in pixels (the same reason as MAX_NUM_FRAMES)."""


@dataclass(frozen=True)
class FrameOptions:
    """Everything that decides a clip (the CLI flags and the `video.frames` params section)."""

    num_frames: int = 16
    sampling: str = "uniform"
    stride: int = 1
    target_fps: float | None = None
    short_policy: str = "repeat_last"
    size: tuple[int, int] | None = None
    resize_mode: str = "pad"
    timeout_s: float = 120.0
    extensions: tuple[str, ...] = VIDEO_EXTENSIONS

    @classmethod
    def from_params(cls, section: Mapping[str, Any]) -> FrameOptions:
        """Options from a params section with these keys (missing keys keep their defaults,
        unknown keys are an error); `size` is [H, W] or null for the native size."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(section) - known)
        if unknown:
            raise ValueError(
                f"unknown video frames option(s) {unknown}; expected some of {sorted(known)}"
            )
        values = dict(section)
        if values.get("size") is not None:
            values["size"] = tuple(values["size"])
        if "extensions" in values:
            values["extensions"] = tuple(values["extensions"])
        options = cls(**values)
        options.check()
        return options

    def check(self) -> None:
        """Raise ValueError, naming the option, when an option is out of range."""
        bounded_int("num_frames", self.num_frames, 1, MAX_NUM_FRAMES)
        if self.sampling not in STRATEGIES:
            raise ValueError(f"sampling must be one of {list(STRATEGIES)}, got {self.sampling!r}")
        bounded_int("stride", self.stride, 1, MAX_STRIDE)
        if self.sampling == "fps" and self.target_fps is None:
            raise ValueError("sampling 'fps' needs a positive target_fps, got None")
        if self.target_fps is not None:
            positive_number("target_fps", self.target_fps)
        if self.short_policy not in SHORT_POLICIES:
            raise ValueError(
                f"short_policy must be one of {list(SHORT_POLICIES)}, got {self.short_policy!r}"
            )
        if self.size is not None:
            if len(self.size) != 2:
                raise ValueError(f"size must be [H, W] or null, got {self.size!r}")
            for name, side in zip(("size H", "size W"), self.size, strict=True):
                bounded_int(name, side, 1, MAX_SIDE)
        if self.resize_mode not in RESIZE_MODES:
            raise ValueError(
                f"resize_mode must be one of {list(RESIZE_MODES)}, got {self.resize_mode!r}"
            )
        positive_number("timeout_s", self.timeout_s)
        if not self.extensions or not all(e.startswith(".") for e in self.extensions):
            raise ValueError(f"extensions must be suffixes like '.mp4', got {self.extensions!r}")

    def to_json(self) -> str:
        """Canonical JSON of the options (stored in clips.h5)."""
        return json.dumps(asdict(self), sort_keys=True)


def list_videos(videos_dir: str | Path, extensions: tuple[str, ...]) -> list[Path]:
    """Entries of `videos_dir` (not recursive, not folders) with one of `extensions`, by name.
    Non-regular files (a named pipe, a device) are listed too: reading them is what fails."""
    videos_dir = input_folder("--videos", videos_dir)
    wanted = {e.lower() for e in extensions}
    return sorted(p for p in videos_dir.iterdir() if not p.is_dir() and p.suffix.lower() in wanted)


def _row(path: Path, status: str, message: str = "", manifest: dict | None = None) -> dict:
    """A process-list row; the probe's fields where the video got that far, else blanks."""
    manifest = manifest or {}
    return {
        "video": path.name,
        "status": status,
        "message": message,
        "row": -1,
        "frame_count": manifest.get("frame_count", -1),
        "fps": manifest.get("fps", float("nan")),
        "duration_s": manifest.get("duration_s", float("nan")),
        "width": manifest.get("width", -1),
        "height": manifest.get("height", -1),
        "variable_frame_rate": manifest.get("variable_frame_rate", ""),
        "rotation": manifest.get("rotation", float("nan")),
    }


def process_video(path: Path, probe_path: Path, options: FrameOptions) -> dict[str, Any]:
    """Probe, sample, decode and resize one video; give its row and (when processed) its
    arrays `frames`, `indices`, `pts`. Never raises for a bad video."""
    manifest = None
    try:
        manifest, index = probe_and_index(path)
        write_json(probe_path, manifest)
        if manifest["truncated"]:
            raise VideoDecodeError(
                f"{path.name}: truncated: its index lists {manifest['declared_frame_count']} "
                f"frames but only {index.packets} are in the file"
                + (f" ({index.demux_error})" if index.demux_error else "")
            )
        timestamps = index.pts * index.time_base if index.timestamps_ok else None
        indices = sample_indices(
            index.frame_count,
            manifest["fps"],
            options.num_frames,
            options.sampling,
            stride=options.stride,
            target_fps=options.target_fps,
            short_policy=options.short_policy,
            timestamps=timestamps,
        )
        clip = read_frames(path, indices, index=index)
        frames = clip.frames
        if options.size is not None:
            frames = resize_clip(frames, options.size, options.resize_mode)
    except ClipTooShortError as exc:
        return {"row": _row(path, "too_short", f"{path.name}: {exc}", manifest)}
    except VideoError as exc:
        return {"row": _row(path, exc.status, str(exc), manifest)}
    except Exception as exc:  # noqa: BLE001 - one bad video must not stop the batch
        where = traceback.extract_tb(exc.__traceback__)[-1]
        message = (
            f"{path.name}: {type(exc).__name__}: {exc} "
            f"(at {Path(where.filename).name}:{where.lineno})"
        )
        return {"row": _row(path, "failed_decode", message, manifest)}
    return {
        "row": _row(path, "processed", "", manifest),
        "frames": frames,
        "indices": clip.indices,
        "pts": clip.pts_seconds,
    }


def _serve(connection: Connection, task: Callable[..., dict], options: FrameOptions) -> None:
    """Body of a worker process: for each (path, probe path) received, send back
    `task(path, probe_path, options)`; return when the parent closes its end of the pipe."""
    while True:
        try:
            path, probe_path = connection.recv()
        except EOFError:
            return
        connection.send(task(path, probe_path, options))


def _context() -> Any:
    """The forkserver context whose server has PyAV, NumPy, OpenCV and this module imported, so
    a worker starts without importing them."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(_PRELOAD)
    return context


@dataclass
class _Worker:
    """A worker process, the parent's end of its pipe, and the video it is busy with."""

    process: BaseProcess
    connection: Connection
    job: int = -1
    deadline: float = float("inf")

    @classmethod
    def start(cls, context: Any, options: FrameOptions) -> _Worker:
        """Start a worker that ends with this process (`call_exiting_with_parent`). It runs this
        module's `process_video` as found here now, sent by reference."""
        connection, child_end = context.Pipe()
        process = context.Process(
            target=call_exiting_with_parent,
            args=(_serve, child_end, process_video, options),
            daemon=True,
        )
        process.start()
        child_end.close()
        return cls(process, connection)

    def send(self, number: int, job: tuple[Path, Path], timeout_s: float) -> None:
        """Give the worker job `number`, due `timeout_s` from now. A worker found dead here
        (killed while idle) is not an error yet: its pipe then reads as ended, as if it had
        died on the video, which gets `failed_decode`."""
        self.job, self.deadline = number, time.monotonic() + timeout_s
        try:
            self.connection.send(job)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def stop(self) -> None:
        """Kill the worker (nothing is lost: it is idle, or its video is given up) and reap it."""
        self.process.kill()
        self.connection.close()
        self.process.join()


def _results(
    jobs: list[tuple[Path, Path]], options: FrameOptions, workers: int
) -> Iterator[tuple[int, dict]]:
    """(job number, result) as workers finish, jobs sent in order to at most `workers` workers;
    a worker past its deadline is killed and gives a `timeout` row, a dead one a
    `failed_decode` row, and either is replaced when a job needs a worker."""
    context = _context()
    pending = deque(enumerate(jobs))
    idle: list[_Worker] = []
    busy: dict[Connection, _Worker] = {}
    try:
        while pending or busy:
            while pending and (idle or len(busy) < workers):
                worker = idle.pop() if idle else _Worker.start(context, options)
                worker.send(*pending.popleft(), options.timeout_s)
                busy[worker.connection] = worker
            wait = max(0.0, min(w.deadline for w in busy.values()) - time.monotonic())
            for connection in multiprocessing.connection.wait(list(busy), timeout=wait):
                worker = busy.pop(connection)
                try:
                    result = connection.recv()
                except (EOFError, ConnectionResetError):  # reset: it died with the job unread
                    worker.process.join()  # exiting: its own exit code, not a kill's
                    worker.stop()
                    result = {"row": _died_row(jobs[worker.job][0], worker.process.exitcode)}
                else:
                    idle.append(worker)
                yield worker.job, result
            now = time.monotonic()
            for connection, worker in list(busy.items()):
                if now >= worker.deadline:
                    del busy[connection]
                    worker.stop()
                    yield worker.job, {"row": _timeout_row(*jobs[worker.job], options.timeout_s)}
    finally:
        for worker in [*idle, *busy.values()]:
            worker.stop()


def _died_row(path: Path, exitcode: int | None) -> dict:
    """The row of a video whose worker process died on it (exit code negative: the signal)."""
    message = f"{path.name}: the decoding process died (exit code {exitcode})"
    return _row(path, "failed_decode", message)


def _timeout_row(path: Path, probe_path: Path, timeout_s: float) -> dict:
    """The row of a video whose worker was killed at its deadline; the probe file tells whether
    it hung before or after probing."""
    manifest = read_json(probe_path) if probe_path.is_file() else None
    step = "decoding" if manifest else "opening or probing"
    message = f"{path.name}: {step} took longer than {timeout_s:g} s; the process was killed"
    return _row(path, "timeout", message, manifest)


class _ClipWriter:
    """Appends clips to the datasets of an open clips.h5, in the order they are given."""

    def __init__(self, handle: h5py.File, options: FrameOptions) -> None:
        self.handle = handle
        self.options = options
        self.rows = 0
        self.shape: tuple[int, int] | None = tuple(options.size) if options.size else None
        self.first = ""

    def _create(self, shape: tuple[int, int]) -> None:
        steps = self.options.num_frames
        clip = (steps, *shape, 3)
        self.handle.create_dataset(
            "clips",
            (0, *clip),
            np.uint8,
            maxshape=(None, *clip),
            chunks=(1, *clip) if all(clip) else None,
            track_times=False,
        )
        for name, dtype in (("frame_indices", np.int64), ("pts_seconds", np.float64)):
            self.handle.create_dataset(
                name,
                (0, steps),
                dtype,
                maxshape=(None, steps),
                chunks=(64, steps),
                track_times=False,
            )
        self.handle.create_dataset(
            "videos",
            (0,),
            h5py.string_dtype(),
            maxshape=(None,),
            chunks=(64,),
            track_times=False,
        )

    def add(self, row: dict, result: dict) -> None:
        """Append a processed video's clip (or turn its row into `size_mismatch`)."""
        shape = result["frames"].shape[1:3]
        if "clips" not in self.handle:
            self.shape, self.first = shape, row["video"]
            self._create(shape)
        if shape != self.shape:
            row["status"] = "size_mismatch"
            row["message"] = (
                f"{row['video']}: native size {shape[1]}x{shape[0]} differs from "
                f"{self.shape[1]}x{self.shape[0]} of {self.first}; set a size to resize clips"
            )
            return
        values = {
            "clips": result["frames"],
            "frame_indices": result["indices"],
            "pts_seconds": result["pts"],
            "videos": row["video"],
        }
        for name, value in values.items():
            self.handle[name].resize(self.rows + 1, axis=0)
            self.handle[name][self.rows] = value
        row["row"] = self.rows
        self.rows += 1

    def close(self) -> None:
        """Create empty datasets when no clip was written; store the options."""
        if "clips" not in self.handle:
            self._create(self.shape or (0, 0))
        self.handle.attrs["options"] = self.options.to_json()


def _index_frame(rows: list[dict], h5_path: Path) -> pd.DataFrame:
    """index.csv: one row per clip, its frame indices and timestamps as space-separated lists."""
    with h5py.File(h5_path, "r") as handle:
        indices, pts = handle["frame_indices"][()], handle["pts_seconds"][()]
    records = [
        {
            "video": row["video"],
            "row": row["row"],
            "frame_indices": " ".join(str(int(v)) for v in indices[row["row"]]),
            "timestamps": " ".join(f"{v:.6f}" for v in pts[row["row"]]),
        }
        for row in rows
        if row["row"] >= 0
    ]
    return pd.DataFrame(records, columns=["video", "row", "frame_indices", "timestamps"])


def extract_frames(
    videos_dir: str | Path,
    out_dir: str | Path,
    options: FrameOptions | None = None,
    workers: int = 1,
    show_progress: bool = True,
) -> pd.DataFrame:
    """Extract a clip from every video in `videos_dir` into `out_dir`; returns (and writes)
    the process list. Raises ValueError for bad options or a missing folder only."""
    options = options or FrameOptions()
    options.check()
    bounded_int("--workers", workers, 1, MAX_WORKERS)
    out_dir = output_folder("--out", out_dir)
    videos = list_videos(videos_dir, options.extensions)
    probe_dir = out_dir / "probe"
    probe_dir.mkdir(parents=True, exist_ok=True)
    rows: list[dict | None] = []
    jobs: list[tuple[Path, Path]] = []
    slots: list[int] = []
    stems: dict[str, str] = {}
    for path in videos:
        probe_path = probe_dir / f"{path.stem}.json"
        if path.stem in stems:
            message = f"{path.name}: same name as {stems[path.stem]}; rename one of them"
            rows.append(_row(path, "failed_open", message))
            continue
        stems[path.stem] = path.name
        probe_path.unlink(missing_ok=True)
        slots.append(len(rows))
        rows.append(None)
        jobs.append((path, probe_path))
    h5_path = out_dir / "clips.h5"
    done: dict[int, dict] = {}
    with atomic_path(h5_path) as tmp:
        with h5py.File(tmp, "w", track_order=True) as handle:
            writer = _ClipWriter(handle, options)
            written = 0
            finished = progress(
                _results(jobs, options, workers),
                desc="video frames",
                enabled=show_progress,
                total=len(jobs),
            )
            for number, result in finished:
                done[number] = result
                while written in done:
                    result = done.pop(written)
                    row = result["row"]
                    if row["status"] == "processed":
                        writer.add(row, result)
                    rows[slots[written]] = row
                    written += 1
            writer.close()
    frame = pd.DataFrame(rows, columns=COLUMNS)
    write_csv(out_dir / "index.csv", _index_frame(rows, h5_path))
    write_csv(out_dir / "process_list.csv", frame)
    return frame
