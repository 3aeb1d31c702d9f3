"""Test videos whose every frame says which one it is, made by the real ffmpeg binary.

`pattern_frames(n)` draws frame i with i's 16 bits as black/white 8x8 blocks in the top two
block rows (`frame_number` reads them back, robust to lossy coding) and a square moving
below, so a wrong frame is caught. The `videos` fixture encodes them with the ffmpeg of the
imageio-ffmpeg wheel (not our own `write_mp4`), with B-frames, a long GOP, a variable frame
rate, a display rotation, an edit list that discards packets, and the bad files a batch meets.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import imageio_ffmpeg
import numpy as np
import pytest

FFMPEG = imageio_ffmpeg.get_ffmpeg_exe()
HEIGHT, WIDTH, FPS = 48, 64, 25
GOOD = ("cfr_bframes.mp4", "long_gop.mp4", "vfr.mp4", "rotated.mp4", "edit_list.mp4")
BAD = ("truncated.mp4", "zero.mp4", "text.mp4", "audio.mp4")


def pattern_frames(count: int, height: int = HEIGHT, width: int = WIDTH) -> np.ndarray:
    """uint8 [count, height, width, 3] frames, each distinct and identifiable."""
    frames = np.zeros((count, height, width, 3), dtype=np.uint8)
    ys, xs = np.mgrid[0:height, 0:width]
    for i in range(count):
        frames[i, 16:, :, 0] = ((xs[16:] * 4 + i) % 256).astype(np.uint8)
        frames[i, 16:, :, 2] = ((ys[16:] * 5) % 256).astype(np.uint8)
        x = (3 * i) % (width - 8)
        frames[i, 24:32, x : x + 8] = 255
        for bit in range(16):
            if i >> bit & 1:
                row, col = divmod(bit, 8)
                frames[i, row * 8 : row * 8 + 8, col * 8 : col * 8 + 8] = 255
    return frames


def frame_number(image: np.ndarray) -> int:
    """The number `pattern_frames` drew into `image`."""
    number = 0
    for bit in range(16):
        row, col = divmod(bit, 8)
        block = image[row * 8 + 2 : row * 8 + 6, col * 8 + 2 : col * 8 + 6]
        number |= int(block.mean() > 128) << bit
    return number


def ffmpeg(*args: str) -> None:
    """Run the ffmpeg binary, failing the test with its message."""
    result = subprocess.run(
        [FFMPEG, "-hide_banner", "-loglevel", "error", "-y", *args], capture_output=True
    )
    assert result.returncode == 0, result.stderr.decode()


def ffmpeg_encode(path: Path, frames: np.ndarray, *options: str) -> Path:
    """Encode RGB `frames` at FPS with ffmpeg's libx264 (yuv420p), fed raw on stdin."""
    height, width = frames.shape[1:3]
    command = [FFMPEG, "-hide_banner", "-loglevel", "error", "-y", "-f", "rawvideo"]
    command += ["-pix_fmt", "rgb24", "-s", f"{width}x{height}", "-r", str(FPS), "-i", "-"]
    command += ["-c:v", "libx264", "-pix_fmt", "yuv420p", *options, str(path)]
    result = subprocess.run(command, input=frames.tobytes(), capture_output=True)
    assert result.returncode == 0, result.stderr.decode()
    return path


def truncate_mdat(source: Path, target: Path) -> None:
    """Copy `source` cut halfway through its frame data (the moov stays whole at the front)."""
    data = source.read_bytes()
    moov, mdat = data.find(b"moov"), data.find(b"mdat")
    assert 0 < moov < mdat, "the source must have its moov before its mdat (+faststart)"
    target.write_bytes(data[: mdat + (len(data) - mdat) // 2])


@pytest.fixture(scope="session")
def videos(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Name -> path of every test video (GOOD and BAD, plus the truncated file's source)."""
    folder = tmp_path_factory.mktemp("videos")
    made = {name: folder / name for name in (*GOOD, *BAD, "faststart_source.mp4")}
    ffmpeg_encode(made["cfr_bframes.mp4"], pattern_frames(60), "-bf", "3", "-g", "12")
    ffmpeg_encode(
        made["long_gop.mp4"],
        pattern_frames(300),
        *("-bf", "3", "-g", "250", "-keyint_min", "250", "-sc_threshold", "0"),
    )
    ffmpeg_encode(
        made["vfr.mp4"],
        pattern_frames(80),
        *("-vf", r"settb=1/100,setpts=4*N-2*mod(N\,2)", "-fps_mode", "vfr"),
        *("-enc_time_base", "1/100", "-bf", "2", "-g", "30"),
    )
    ffmpeg("-display_rotation", "90", "-i", str(made["cfr_bframes.mp4"]), "-c", "copy",
           str(made["rotated.mp4"]))  # fmt: skip
    ffmpeg("-ss", "1.3", "-i", str(made["long_gop.mp4"]), "-c", "copy", str(made["edit_list.mp4"]))
    source = made["faststart_source.mp4"]
    ffmpeg_encode(source, pattern_frames(60), "-bf", "2", "-g", "15", "-movflags", "+faststart")
    truncate_mdat(source, made["truncated.mp4"])
    made["zero.mp4"].write_bytes(b"")
    made["text.mp4"].write_text("this is not a video\n")
    ffmpeg("-f", "lavfi", "-i", "sine=duration=0.5", "-c:a", "aac", "-f", "mp4",
           str(made["audio.mp4"]))  # fmt: skip
    return made
