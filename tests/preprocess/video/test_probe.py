"""probe_video on ffmpeg-made files and on the files that are not videos."""

from __future__ import annotations

import json
import os

import pytest

from reprolab.preprocess.video.probe import VideoOpenError, probe_video


def test_probe_constant_rate_with_b_frames(videos):
    manifest = probe_video(videos["cfr_bframes.mp4"])
    json.dumps(manifest)
    assert manifest["file"] == "cfr_bframes.mp4"
    assert (manifest["codec"], manifest["width"], manifest["height"]) == ("h264", 64, 48)
    assert manifest["pix_fmt"] == "yuv420p"
    assert manifest["frame_count"] == 60 and manifest["fps"] == pytest.approx(25)
    assert manifest["duration_s"] == pytest.approx(60 / 25)
    assert manifest["has_b_frames"] and not manifest["variable_frame_rate"]
    assert manifest["gop"] == 12 and manifest["rotation"] == 0
    assert manifest["streams"] == [{"index": 0, "kind": "video", "codec": "h264"}]
    assert not manifest["truncated"] and manifest["timestamps_ok"]


def test_probe_long_gop_vfr_rotation_edit_list(videos):
    long_gop = probe_video(videos["long_gop.mp4"])
    assert long_gop["gop"] == 250 and long_gop["frame_count"] == 300
    vfr = probe_video(videos["vfr.mp4"])
    assert vfr["variable_frame_rate"] and vfr["frame_count"] == 80
    # Steps of 0.02 s and 0.06 s alternate: 80 frames over 79 steps of 0.04 s on average.
    assert vfr["fps"] == pytest.approx(79 / (0.04 * 79 - 0.02 * (79 % 2)), rel=0.02)
    assert probe_video(videos["rotated.mp4"])["rotation"] == 90
    cut = probe_video(videos["edit_list.mp4"])
    assert cut["discarded_packets"] > 0
    assert cut["frame_count"] == cut["declared_frame_count"] - cut["discarded_packets"]
    assert not cut["truncated"]


def test_probe_flags_a_truncated_file(videos):
    manifest = probe_video(videos["truncated.mp4"])
    assert manifest["truncated"]
    assert manifest["frame_count"] < manifest["declared_frame_count"] == 60


@pytest.mark.parametrize(
    "name, message",
    [
        ("zero.mp4", "zero bytes"),
        ("text.mp4", "not a readable media file"),
        ("audio.mp4", r"no video stream \(streams: audio/aac\)"),
        ("missing.mp4", "cannot open it"),
    ],
)
def test_probe_names_the_file_that_is_not_a_video(videos, name, message):
    path = videos["zero.mp4"].parent / name
    with pytest.raises(VideoOpenError, match=message) as info:
        probe_video(path)
    assert str(path) in str(info.value)
    assert info.value.status == "failed_open"
    assert os.path.basename(path) in str(info.value)
