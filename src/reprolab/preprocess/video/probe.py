"""Facts about a video file's first video stream, read from its demuxed packets.

`probe_video(path)` returns a JSON-able dict (the per-video manifest of `reprolab video frames`).
`probe_and_index(path)` gives them with the presentation-order index that `decode` uses
to find frame k. Choices:

- A *frame* is a demuxed packet that carries data and is not flagged discard (packets before
  an MP4 edit list's start are decoded as references but never displayed). Frame k is the
  packet with the k-th smallest pts. `frame_count` is counted this way, never taken from the
  header (`stream.frames` is often 0 or counts discarded samples); the header's count is kept as
  `declared_frame_count` and a file whose index lists more samples than it holds is `truncated`.
- When a packet has no pts (raw elementary streams, some AVI files) or two share one, the index
  falls back to counting (`timestamps_ok` false): frame k is then the k-th decoded frame.
- `fps` is the mean rate of the displayed timestamps ((n - 1) / span), `duration_s` the span
  plus one median frame step; `variable_frame_rate` is set when a pts step differs from the
  median step by more than one tick and 1 %.
- `gop` is the longest run of displayed frames from one keyframe to the next (or to the end);
  `has_b_frames` is set when decode order differs from presentation order.
- `rotation` (degrees, counter-clockwise, as ffmpeg's `-display_rotation`) comes from the
  display matrix of the first decoded frame, else from the stream's `rotate` metadata.
"""

from __future__ import annotations

import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import av
import numpy as np


class VideoError(Exception):
    """A video that cannot be read as asked; the message names the file. `status` is the
    process-list status this failure gets."""

    status = "failed_decode"


class VideoOpenError(VideoError):
    """The file is empty, not a media file, or has no video stream."""

    status = "failed_open"


class VideoDecodeError(VideoError):
    """Decoding stopped (or a frame was missing) before the requested frames were produced."""

    status = "failed_decode"


@dataclass(frozen=True)
class StreamIndex:
    """The presentation-order index of a video stream.

    `pts` holds the displayed frames' timestamps, sorted (frame k has `pts[k]`; meaningful
    only when `timestamps_ok`); `keyframe_pts`/`keyframe_dts` the keyframes' timestamps
    (discarded ones included, as they start the decode of what follows), sorted by pts.
    """

    pts: np.ndarray
    keyframe_pts: np.ndarray
    keyframe_dts: np.ndarray
    time_base: float
    timestamps_ok: bool
    has_b_frames: bool
    packets: int
    discarded: int
    demux_error: str | None

    @property
    def frame_count(self) -> int:
        """Number of displayed frames."""
        return len(self.pts)


def open_video(path: str | Path) -> tuple[Any, Any]:
    """Open `path` with PyAV; give (container, first video stream) or raise VideoOpenError."""
    path = Path(path)
    try:
        info = path.stat()
    except OSError as exc:
        raise VideoOpenError(f"{path}: cannot open it ({exc.strerror})") from exc
    if stat.S_ISREG(info.st_mode) and info.st_size == 0:
        raise VideoOpenError(f"{path}: the file is empty (zero bytes)")
    try:
        container = av.open(str(path), mode="r")
    except (av.error.FFmpegError, OSError, UnicodeDecodeError) as exc:
        raise VideoOpenError(f"{path}: not a readable media file ({exc})") from exc
    if not container.streams.video:
        kinds = ", ".join(f"{s.type}/{s.codec_context.name}" for s in container.streams)
        container.close()
        raise VideoOpenError(f"{path}: no video stream (streams: {kinds or 'none'})")
    return container, container.streams.video[0]


def index_stream(container: Any, stream: Any) -> StreamIndex:
    """Demux every packet of `stream` (no decoding) into its StreamIndex."""
    shown, key_pts, key_dts, decode_order = [], [], [], []
    packets = discarded = 0
    missing = False
    error = None
    try:
        for packet in container.demux(stream):
            if packet.size == 0:
                continue
            packets += 1
            if packet.pts is None:
                missing = True
            if packet.is_keyframe and packet.pts is not None:
                key_pts.append(packet.pts)
                key_dts.append(packet.dts if packet.dts is not None else packet.pts)
            if packet.is_discard:
                discarded += 1
                continue
            shown.append(packet.pts if packet.pts is not None else -1)
            decode_order.append(packet.pts)
    except av.error.FFmpegError as exc:
        error = f"demuxing stopped after {packets} packets: {exc}"
    pts = np.array(shown, dtype=np.int64)
    order = np.argsort(pts, kind="stable")
    sorted_pts = pts[order]
    unique = bool(np.all(np.diff(sorted_pts) > 0))
    keys = np.argsort(np.array(key_pts, dtype=np.int64), kind="stable")
    return StreamIndex(
        pts=sorted_pts,
        keyframe_pts=np.array(key_pts, dtype=np.int64)[keys],
        keyframe_dts=np.array(key_dts, dtype=np.int64)[keys],
        time_base=float(stream.time_base) if stream.time_base else 0.0,
        timestamps_ok=not missing and unique,
        has_b_frames=not missing and bool(np.any(np.diff(pts) < 0)),
        packets=packets,
        discarded=discarded,
        demux_error=error,
    )


def stream_index(path: str | Path) -> StreamIndex:
    """The presentation-order index of the first video stream of `path` (VideoError if none)."""
    container, stream = open_video(path)
    with container:
        return index_stream(container, stream)


def display_rotation(path: str | Path) -> float:
    """Counter-clockwise display rotation of the first video stream of `path` in degrees in
    [0, 360) (0 when none is recorded), from its first decoded frame (own open of the file)."""
    container, stream = open_video(path)
    angle = 0.0
    with container:
        try:
            for frame in container.decode(stream):
                angle = float(frame.rotation)
                break
        except av.error.FFmpegError:
            pass
        if not angle and "rotate" in stream.metadata:
            angle = -float(stream.metadata["rotate"])
    return angle % 360.0


def _timing(index: StreamIndex, stream: Any) -> tuple[float, float, bool]:
    """(mean fps, duration in seconds, variable frame rate) from the displayed timestamps."""
    if not index.timestamps_ok or index.frame_count < 2 or not index.time_base:
        fps = float(stream.average_rate or stream.guessed_rate or 0.0)
        return fps, (index.frame_count / fps if fps else 0.0), False
    steps = np.diff(index.pts)
    median = float(np.median(steps))
    span = float(index.pts[-1] - index.pts[0])
    fps = (index.frame_count - 1) / (span * index.time_base)
    variable = bool(np.any(np.abs(steps - median) > max(1.0, 0.01 * median)))
    return fps, (span + median) * index.time_base, variable


def _gop(index: StreamIndex) -> int:
    """Longest run of displayed frames from a keyframe to the next one (or to the end)."""
    if not index.timestamps_ok or not len(index.keyframe_pts):
        return index.frame_count
    starts = np.searchsorted(index.pts, index.keyframe_pts, side="left")
    bounds = np.unique(np.concatenate([[0], starts, [index.frame_count]]))
    return int(np.max(np.diff(bounds))) if len(bounds) > 1 else index.frame_count


def probe_video(path: str | Path) -> dict[str, Any]:
    """The manifest of `path`'s first video stream (see the module docstring for each key).

    Raises VideoOpenError for a missing, empty or non-media file or one without video.
    """
    return probe_and_index(path)[0]


def probe_and_index(path: str | Path) -> tuple[dict[str, Any], StreamIndex]:
    """`probe_video(path)` and the stream's index, from one pass over the packets."""
    path = Path(path)
    container, stream = open_video(path)
    with container:
        index = index_stream(container, stream)
        streams = [
            {"index": s.index, "kind": s.type, "codec": s.codec_context.name}
            for s in container.streams
        ]
        fps, duration, variable = _timing(index, stream)
        context = stream.codec_context
        declared = int(stream.frames or 0)
        manifest = {
            "file": path.name,
            "format": container.format.name,
            "codec": context.name,
            "width": int(context.width),
            "height": int(context.height),
            "pix_fmt": context.pix_fmt,
            "fps": fps,
            "frame_count": index.frame_count,
            "declared_frame_count": declared,
            "truncated": declared > index.packets or index.demux_error is not None,
            "discarded_packets": index.discarded,
            "duration_s": duration,
            "variable_frame_rate": variable,
            "gop": _gop(index),
            "has_b_frames": index.has_b_frames,
            "rotation": display_rotation(path),
            "time_base": str(stream.time_base),
            "timestamps_ok": index.timestamps_ok,
            "demux_error": index.demux_error,
            "streams": streams,
        }
    return manifest, index
