"""write_mp4: real H.264 files, reproducible bytes, clear errors."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from reprolab.preprocess.video.decode import decode_all
from reprolab.preprocess.video.encode import write_mp4
from reprolab.preprocess.video.probe import probe_video
from tests.preprocess.video.conftest import frame_number, pattern_frames


def test_write_mp4_round_trips_the_frames(tmp_path):
    frames = pattern_frames(20)
    path = tmp_path / "a.mp4"
    write_mp4(path, frames, fps=25)
    clip = decode_all(path)
    assert clip.frames.shape == frames.shape
    assert [frame_number(f) for f in clip.frames] == list(range(20))
    # Lossless x264 in yuv444p: only the RGB <-> YUV round trip differs.
    assert np.abs(clip.frames.astype(int) - frames).max() <= 4
    np.testing.assert_allclose(clip.pts_seconds, np.arange(20) / 25)
    assert [p.name for p in tmp_path.iterdir()] == ["a.mp4"]


@pytest.mark.parametrize("height, width", [(32, 32), (48, 64)])
def test_write_mp4_is_deterministic(tmp_path, height, width):
    frames = pattern_frames(24, height, width)
    noise = np.random.default_rng(0).integers(0, 256, (8, 96, 128, 3), dtype=np.uint8)
    digests = set()
    for run in range(6):
        # Another encode in between leaves other data on the heap (x264's mbtree read it).
        write_mp4(tmp_path / "other.mp4", np.roll(noise, run, axis=2), fps=30, crf=18)
        write_mp4(tmp_path / "a.mp4", frames, fps=30, crf=18, pix_fmt="yuv420p", bframes=2)
        digests.add(hashlib.sha256((tmp_path / "a.mp4").read_bytes()).hexdigest())
    assert len(digests) == 1


def test_write_mp4_sets_gop_and_b_frames(tmp_path):
    write_mp4(tmp_path / "a.mp4", pattern_frames(40), fps=25, gop=8, crf=18, bframes=2)
    manifest = probe_video(tmp_path / "a.mp4")
    assert manifest["gop"] == 8 and manifest["has_b_frames"]
    assert manifest["frame_count"] == 40 and manifest["fps"] == pytest.approx(25)
    write_mp4(tmp_path / "b.mp4", pattern_frames(10), fps=12.5, gop=4)
    manifest = probe_video(tmp_path / "b.mp4")
    assert manifest["gop"] == 4 and not manifest["has_b_frames"]
    assert manifest["fps"] == pytest.approx(12.5)


def test_write_mp4_rejects_bad_frames(tmp_path):
    with pytest.raises(ValueError, match=r"63x47 frames cannot be stored as yuv420p"):
        write_mp4(tmp_path / "odd.mp4", pattern_frames(3, 47, 63), fps=25, pix_fmt="yuv420p")
    write_mp4(tmp_path / "odd444.mp4", pattern_frames(3, 47, 63), fps=25)
    assert decode_all(tmp_path / "odd444.mp4").frames.shape == (3, 47, 63, 3)
    with pytest.raises(ValueError, match="uint8"):
        write_mp4(tmp_path / "f.mp4", np.zeros((2, 8, 8, 3), np.float32), fps=25)
    with pytest.raises(ValueError, match="fps must be positive"):
        write_mp4(tmp_path / "f.mp4", pattern_frames(2), fps=0)
    assert not (tmp_path / "odd.mp4").exists() and not (tmp_path / "f.mp4").exists()
