"""Write frames as an H.264 MP4 through PyAV, atomically and with reproducible bytes.

Choices: libx264 with one thread (x264's multi-threaded encode depends on thread timing) and
without macroblock-tree rate control (see X264_PARAMS), the codec and the MP4 muxer in
bitexact mode (no encoder version string or creation time in the file), frame `i` at pts `i`
in a time base of 1/fps, a fixed GOP with scene-cut detection off (so the keyframes sit at
multiples of `gop`), and `bframes` B-frames. The default `crf=0` with `yuv444p` is x264's
lossless mode (which makes no B-frames), so the decoded frames differ from the input only by
the RGB to YUV round trip. Sizes that the pixel format cannot hold (odd sizes in 4:2:0) are
refused.
"""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import av
import numpy as np

from reprolab.core.io import atomic_path

# mbtree=0: x264's macroblock-tree rate control gave different bytes from run to run on small
# frames (32x32 to 112x112 at crf 18 with B-frames, once the heap held other data), which
# points at a read of uninitialised memory; without it 20 of 20 writes were identical.
X264_PARAMS = "keyint={gop}:min-keyint={gop}:scenecut=0:bframes={bframes}:mbtree=0"
_SUBSAMPLED = {"yuv420p": (2, 2), "yuvj420p": (2, 2), "yuv422p": (2, 1), "nv12": (2, 2)}


def _check(path: Path, frames: np.ndarray, fps: float, pix_fmt: str, gop: int) -> None:
    if frames.ndim != 4 or frames.shape[-1] != 3 or frames.dtype != np.uint8:
        raise ValueError(
            f"{path}: frames must be uint8 [T, H, W, 3], got {frames.dtype} {list(frames.shape)}"
        )
    if len(frames) == 0:
        raise ValueError(f"{path}: no frames to write")
    if not fps > 0:
        raise ValueError(f"{path}: fps must be positive, got {fps}")
    if gop < 1:
        raise ValueError(f"{path}: gop must be at least 1, got {gop}")
    step_x, step_y = _SUBSAMPLED.get(pix_fmt, (1, 1))
    height, width = frames.shape[1:3]
    if width % step_x or height % step_y:
        raise ValueError(
            f"{path}: {width}x{height} frames cannot be stored as {pix_fmt}, which needs a "
            f"width divisible by {step_x} and a height divisible by {step_y} (use yuv444p or "
            f"pad/crop the frames)"
        )


def write_mp4(
    path: str | Path,
    frames: np.ndarray,
    fps: float,
    crf: int = 0,
    gop: int = 16,
    pix_fmt: str = "yuv444p",
    bframes: int = 0,
    codec: str = "libx264",
) -> None:
    """Encode RGB `frames` (uint8 [T, H, W, 3]) at `fps` into the MP4 file `path`.

    The same frames and arguments give the same bytes. Raises ValueError for frames of the
    wrong shape or type, a non-positive fps, or a size `pix_fmt` cannot hold.
    """
    path = Path(path)
    frames = np.asarray(frames)
    _check(path, frames, fps, pix_fmt, gop)
    rate = Fraction(fps).limit_denominator(1001 * 1000)
    time_base = 1 / rate
    with atomic_path(path) as tmp:
        with av.open(str(tmp), "w", format="mp4", options={"fflags": "+bitexact"}) as container:
            stream = container.add_stream(codec, rate=rate)
            stream.height, stream.width = frames.shape[1:3]
            stream.pix_fmt = pix_fmt
            context = stream.codec_context
            context.thread_count = 1
            context.flags |= av.codec.context.Flags.bitexact
            context.gop_size = gop
            context.max_b_frames = bframes
            options = {"crf": str(crf)}
            if codec == "libx264":
                options["x264-params"] = X264_PARAMS.format(gop=gop, bframes=bframes)
            stream.options = options
            for index, image in enumerate(frames):
                frame = av.VideoFrame.from_ndarray(image, format="rgb24")
                frame.pts = index
                frame.time_base = time_base
                container.mux(stream.encode(frame))
            container.mux(stream.encode(None))
