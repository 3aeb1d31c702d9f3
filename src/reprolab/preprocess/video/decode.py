"""Frame-exact decoding: frame k is the k-th displayed frame of a full sequential decode.

`decode_all(path)` is that sequential decode (the reference). `read_frames(path, indices)`
returns the same frames for any list of indices without decoding everything:

1. build the presentation-order index from the demuxed packets (`probe.StreamIndex`: the
   displayed frames' pts sorted, the keyframes' pts and dts);
2. visit the requested frames in increasing order and decode forward only; seek to the
   keyframe at or before the next target only when a keyframe lies between the last decoded
   frame and that target, otherwise keep decoding. The seek goes by the keyframe's pts and,
   if the demuxer lands after the keyframe (MP4 indexes dts), again by its dts. Frames are
   matched to indices by their pts, never by counting after a seek, and frames before the
   keyframe a seek went to (an open GOP's leading pictures) are ignored;
3. packets that are not requested are decoded with `skip_frame = NONREF`: pictures that no
   other picture refers to (most B-frames) are not decoded at all, which changes no other
   frame, and this is what makes sparse sampling fast;
4. requested frames that share a keyframe interval (no keyframe between them) form one group;
   groups are independent (each starts with a seek to its keyframe), so with `threads > 1`
   they are read concurrently, each thread with its own demuxer and decoder taking the next
   group in order from a shared queue (PyAV releases the GIL while it demuxes, decodes and
   converts). The pixels do not depend on the thread count;
5. when the stream has no usable timestamps, or a seek cannot reach its keyframe, decode
   sequentially from the start and count frames instead.

Threading inside the decoder: PyAV's default (slice threads only). Frame threading ("AUTO")
gives the same pixels but was slower on the 2-core development machine with one core busy
(decode_all of 1800 320x240 frames: 6.7 s against 3.4 s; read_frames of 16 of them 0.34 s
against 0.25 s), and it would apply a changed `skip_frame` to packets already in flight; the
group threads above are what uses a second core.

Frames are converted through one kept swscale context per reader (`_RgbConverter`), and
`decode_all` writes each one into one growing array instead of stacking a list of frames at
the end, where the list and the stacked copy were both alive (twice the clip's memory: 830 MB
for 1800 frames of 320x240).
Frames are RGB uint8 as FFmpeg's `rgb24` conversion gives them, in the file's coded
orientation unless `apply_rotation` turns them as the display matrix says (multiples of 90°).
"""

from __future__ import annotations

import queue
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import av
import numpy as np
from av.video.reformatter import VideoReformatter

from reprolab.core.arguments import MAX_WORKERS, bounded_int
from reprolab.preprocess.video.probe import (
    StreamIndex,
    VideoDecodeError,
    VideoError,
    display_rotation,
    index_stream,
    open_video,
)


@dataclass(frozen=True)
class DecodedClip:
    """Frames uint8 [T, H, W, 3] RGB in the requested order, their presentation times in
    seconds (NaN where the stream has none) and their frame indices."""

    frames: np.ndarray
    pts_seconds: np.ndarray
    indices: np.ndarray


class _Overshoot(Exception):
    """Reading by pts cannot go on: a seek landed past its keyframe or a frame has no pts."""


def _frames(
    container: Any, stream: Any, path: Path, where: str, keep: set[int] | None = None
) -> Iterator[Any]:
    """Decoded frames of `stream` from the demuxer's position. With `keep`, packets whose pts
    is not in it are decoded with `skip_frame = NONREF`: a picture no other picture refers to
    is not decoded at all, which cannot change any other frame. A decoding error becomes
    VideoDecodeError naming `where`."""
    context = stream.codec_context
    try:
        for packet in container.demux(stream):
            if keep is not None:
                context.skip_frame = "DEFAULT" if packet.pts in keep else "NONREF"
            yield from packet.decode()
    except av.error.FFmpegError as exc:
        raise VideoDecodeError(f"{path}: decoding failed {where}: {exc}") from exc
    finally:
        context.skip_frame = "DEFAULT"


class _RgbConverter:
    """Converts decoded frames to RGB uint8 arrays, as `frame.to_ndarray(format="rgb24")` does,
    through one kept `VideoReformatter`: `to_ndarray` makes a new one (a new swscale context)
    for every frame. At 320x240 that conversion cost 0.49 ms a frame, twice the decode itself;
    with the kept context 0.16 ms. Not shared between threads."""

    def __init__(self) -> None:
        self.reformatter = VideoReformatter()

    def __call__(self, frame: Any) -> np.ndarray:
        return self.reformatter.reformat(frame, format="rgb24").to_ndarray()


def _seconds(frame: Any) -> float:
    return float(frame.pts * frame.time_base) if frame.pts is not None else float("nan")


def _sequential(
    container: Any, stream: Any, path: Path, wanted: set[int], last: int
) -> dict[int, tuple[np.ndarray, float]]:
    """Decode a freshly opened container from the start, counting frames; keep those in
    `wanted`, stop after frame `last`."""
    found: dict[int, tuple[np.ndarray, float]] = {}
    count = -1
    rgb = _RgbConverter()
    try:
        for count, frame in enumerate(container.decode(stream)):
            if count in wanted:
                found[count] = (rgb(frame), _seconds(frame))
            if count >= last:
                break
    except av.error.FFmpegError as exc:
        raise VideoDecodeError(
            f"{path}: decoding failed in a sequential decode after {count + 1} frames: {exc}"
        ) from exc
    return found


def _decode_every_frame(
    container: Any, stream: Any, path: Path, shape: tuple[int, int]
) -> tuple[np.ndarray, np.ndarray]:
    """Every frame of a freshly opened container and its seconds, in display order.

    Frames go straight into one array, sized first by the container's declared frame count
    and doubled when the stream holds more (copied down to size when it holds fewer).
    """
    frames = np.empty((max(1, stream.frames), *shape, 3), dtype=np.uint8)
    seconds: list[float] = []
    rgb = _RgbConverter()
    try:
        for frame in container.decode(stream):
            if len(seconds) == len(frames):
                frames = np.concatenate([frames, np.empty_like(frames)])
            frames[len(seconds)] = rgb(frame)
            seconds.append(_seconds(frame))
    except av.error.FFmpegError as exc:
        raise VideoDecodeError(
            f"{path}: decoding failed in a sequential decode after {len(seconds)} frames: {exc}"
        ) from exc
    if len(seconds) < len(frames):
        frames = frames[: len(seconds)].copy()
    return frames, np.array(seconds, dtype=np.float64)


class _ForwardReader:
    """Decodes the frames with the given sorted pts, forward, seeking only across keyframes."""

    def __init__(self, container: Any, stream: Any, path: Path, index: StreamIndex) -> None:
        self.container, self.stream, self.path, self.index = container, stream, path, index
        self.rgb = _RgbConverter()
        self.frames: Iterator[Any] | None = None
        self.last_pts: int | None = None

    def _keyframe(self, target: int) -> int:
        """Position (in index.keyframe_pts) of the last keyframe at or before `target`."""
        return int(np.searchsorted(self.index.keyframe_pts, target, side="right")) - 1

    def _crosses_keyframe(self, key: int) -> bool:
        """Whether keyframe `key` lies after the last decoded frame (then a seek pays)."""
        return (
            key >= 0 and self.last_pts is not None and self.index.keyframe_pts[key] > self.last_pts
        )

    def _start_at(self, key: int, target: int, keep: set[int], where: str) -> Any:
        """Seek to keyframe `key` and give the first frame at or after it.

        The seek goes by the keyframe's pts; a demuxer whose index is kept in dts (MP4) can
        land one GOP late, and then the keyframe's dts (never after the keyframe) is used.
        Frames before the keyframe (an open GOP's leading pictures) are skipped.
        """
        if key < 0:
            raise _Overshoot
        floor = int(self.index.keyframe_pts[key])
        for offset in (floor, int(self.index.keyframe_dts[key])):
            self.container.seek(offset, stream=self.stream)
            self.frames = _frames(self.container, self.stream, self.path, where, keep)
            for frame in self.frames:
                if frame.pts is None:
                    raise _Overshoot
                if frame.pts >= floor:
                    if frame.pts <= target:
                        return frame
                    break
        raise _Overshoot

    def read(self, wanted: np.ndarray) -> dict[int, tuple[np.ndarray, float]]:
        """RGB frame and seconds of each frame index in `wanted` (sorted, unique)."""
        targets = self.index.pts[wanted]
        keep = set(targets.tolist())
        found: dict[int, tuple[np.ndarray, float]] = {}
        position = 0
        while position < len(wanted):
            target = int(targets[position])
            key = self._keyframe(target)
            if self.frames is None or self._crosses_keyframe(key):
                where = f"before frame {wanted[position]}"
                first = self._start_at(key, target, keep, where)
                frames = _chain(first, self.frames)
            else:
                frames = self.frames
            for frame in frames:
                self.last_pts = frame.pts
                if frame.pts < target:
                    continue
                if frame.pts > target:
                    raise VideoDecodeError(
                        f"{self.path}: the decoder never produced frame {wanted[position]} "
                        f"(pts {target}); it went on to pts {frame.pts}"
                    )
                found[int(wanted[position])] = (self.rgb(frame), _seconds(frame))
                position += 1
                if position == len(wanted):
                    break
                target = int(targets[position])
                if self._crosses_keyframe(self._keyframe(target)):
                    break
            else:
                raise VideoDecodeError(
                    f"{self.path}: the stream ended before frame {wanted[position]} of "
                    f"{self.index.frame_count} (last pts decoded: {self.last_pts})"
                )
        return found


def _keyframe_groups(index: StreamIndex, wanted: np.ndarray) -> list[np.ndarray]:
    """`wanted` (sorted, unique) split where a keyframe lies between two consecutive frames:
    each group is read from one seek to its own keyframe, independently of the others."""
    keys = np.searchsorted(index.keyframe_pts, index.pts[wanted], side="right")
    return np.split(wanted, np.flatnonzero(np.diff(keys)) + 1)


def _drop_rest(pending: queue.SimpleQueue) -> None:
    """Empty `pending`, so the other threads stop after their current group."""
    try:
        while True:
            pending.get_nowait()
    except queue.Empty:
        pass


def _read_groups(
    path: Path, index: StreamIndex, groups: list[np.ndarray], threads: int
) -> dict[int, tuple[np.ndarray, float]]:
    """Read keyframe groups on `threads` threads, each with its own container and reader.

    Each thread takes the next group from one queue, so a thread's groups come in increasing
    order (its reader only decodes forward) and a slow group does not hold back the rest. The
    first error (an `_Overshoot` included) empties the queue and is raised once the threads
    are done.
    """
    pending: queue.SimpleQueue = queue.SimpleQueue()
    for group in groups:
        pending.put(group)

    def drain() -> dict[int, tuple[np.ndarray, float]]:
        found: dict[int, tuple[np.ndarray, float]] = {}
        container, stream = open_video(path)
        with container:
            reader = _ForwardReader(container, stream, path, index)
            while True:
                try:
                    group = pending.get_nowait()
                except queue.Empty:
                    return found
                try:
                    found.update(reader.read(group))
                except BaseException:
                    _drop_rest(pending)
                    raise

    with ThreadPoolExecutor(threads) as pool:
        parts = [pool.submit(drain) for _ in range(threads)]
    found: dict[int, tuple[np.ndarray, float]] = {}
    for part in parts:
        found.update(part.result())
    return found


def _chain(first: Any, rest: Iterator[Any]) -> Iterator[Any]:
    yield first
    yield from rest


def _rotate(frames: np.ndarray, degrees: float, path: Path) -> np.ndarray:
    """Turn [T, H, W, 3] frames counter-clockwise by `degrees` (a multiple of 90)."""
    turns = degrees / 90.0
    if turns != int(turns):
        raise VideoError(f"{path}: rotation {degrees}° is not a multiple of 90")
    return np.ascontiguousarray(np.rot90(frames, k=int(turns) % 4, axes=(1, 2)))


def _clip(
    found: dict[int, tuple[np.ndarray, float]],
    order: np.ndarray,
    shape: tuple[int, int],
) -> DecodedClip:
    if not len(order):
        frames = np.zeros((0, *shape, 3), dtype=np.uint8)
    else:
        frames = np.stack([found[int(i)][0] for i in order])
    pts = np.array([found[int(i)][1] for i in order], dtype=np.float64)
    return DecodedClip(frames, pts, np.asarray(order, dtype=np.int64))


def decode_all(path: str | Path, apply_rotation: bool = False) -> DecodedClip:
    """Every displayed frame of `path`, by one sequential decode (the reference of exactness).

    `apply_rotation` turns the frames as the file's display rotation says.
    Raises VideoOpenError for an unreadable file and VideoDecodeError when decoding fails.
    """
    path = Path(path)
    container, stream = open_video(path)
    with container:
        shape = (stream.codec_context.height, stream.codec_context.width)
        frames, seconds = _decode_every_frame(container, stream, path, shape)
    if apply_rotation and (rotation := display_rotation(path)):
        frames = _rotate(frames, rotation, path)
    return DecodedClip(frames, seconds, np.arange(len(frames), dtype=np.int64))


def read_frames(
    path: str | Path,
    indices: np.ndarray | list[int],
    apply_rotation: bool = False,
    index: StreamIndex | None = None,
    threads: int = 1,
) -> DecodedClip:
    """The frames at `indices` (any order, repeats allowed) of `path`, exactly as `decode_all`
    gives them. `apply_rotation` turns them as the file's display rotation says (off by
    default: frames come in the coded orientation). `index` reuses a `probe.stream_index` of
    the same file. `threads` reads up to that many keyframe intervals at once (the frames do
    not depend on it). Raises VideoError naming the file, the index and the frame count for an index
    out of range, VideoOpenError for an unreadable file and VideoDecodeError when decoding stops
    before a requested frame.
    """
    path = Path(path)
    bounded_int("threads", threads, 1, MAX_WORKERS)
    order = np.asarray(indices, dtype=np.int64).reshape(-1)
    container, stream = open_video(path)
    with container:
        if index is None:
            index = index_stream(container, stream)
        bad = order[(order < 0) | (order >= index.frame_count)]
        if len(bad):
            raise VideoError(
                f"{path}: frame index {int(bad[0])} is out of range; the video has "
                f"{index.frame_count} frames (0..{index.frame_count - 1})"
            )
        shape = (stream.codec_context.height, stream.codec_context.width)
        wanted = np.unique(order)
        found: dict[int, tuple[np.ndarray, float]] = {}
        if len(wanted) and index.timestamps_ok:
            try:
                groups = _keyframe_groups(index, wanted)
                if threads > 1 and len(groups) > 1:
                    found = _read_groups(path, index, groups, min(threads, len(groups)))
                else:
                    found = _ForwardReader(container, stream, path, index).read(wanted)
            except _Overshoot:
                found = {}
    if len(wanted) and not found:
        container, stream = open_video(path)
        with container:
            found = _sequential(container, stream, path, set(wanted.tolist()), wanted[-1])
    missing = [int(i) for i in wanted if int(i) not in found]
    if missing:
        raise VideoDecodeError(
            f"{path}: frames {missing[:5]} of {index.frame_count} were not produced"
        )
    rotation = display_rotation(path) if apply_rotation else 0.0
    clip = _clip(found, order, shape)
    if rotation:
        clip = DecodedClip(_rotate(clip.frames, rotation, path), clip.pts_seconds, clip.indices)
    return clip
