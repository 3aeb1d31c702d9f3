"""extract_frames over a folder with good and bad videos: statuses, clips.h5, determinism."""

from __future__ import annotations

import os
import shutil

import h5py
import numpy as np
import pandas as pd
import pytest

from reprolab.core.io import read_json
from reprolab.preprocess.video.decode import read_frames
from reprolab.preprocess.video.encode import write_mp4
from reprolab.preprocess.video.frames import FrameOptions, extract_frames
from reprolab.preprocess.video.resize import resize_clip
from reprolab.preprocess.video.sampling import sample_indices
from tests.preprocess.video.conftest import BAD, GOOD, pattern_frames

EXPECTED = {
    **{name: "processed" for name in GOOD},
    "truncated.mp4": "failed_decode",
    "zero.mp4": "failed_open",
    "text.mp4": "failed_open",
    "audio.mp4": "failed_open",
    "hang.mp4": "timeout",
}


def _folder(tmp_path, videos, names):
    folder = tmp_path / "videos"
    folder.mkdir()
    for name in names:
        shutil.copy(videos[name], folder / name)
    return folder


def test_batch_survives_bad_files_and_a_hang(tmp_path, videos):
    folder = _folder(tmp_path, videos, (*GOOD, *BAD))
    os.mkfifo(folder / "hang.mp4")  # opening it blocks forever: nobody writes to it
    (folder / "notes.txt").write_text("not listed: wrong extension")
    options = FrameOptions(num_frames=8, size=(32, 40), timeout_s=4.0)
    frame = extract_frames(folder, tmp_path / "out", options, workers=2, show_progress=False)
    assert dict(zip(frame["video"], frame["status"], strict=True)) == EXPECTED
    assert frame["video"].tolist() == sorted(EXPECTED)
    listed = pd.read_csv(tmp_path / "out" / "process_list.csv")
    assert listed["status"].tolist() == frame["status"].tolist()
    messages = frame.set_index("video")["message"]
    assert "truncated" in messages["truncated.mp4"] and "zero bytes" in messages["zero.mp4"]
    assert "no video stream" in messages["audio.mp4"]
    assert "hang.mp4: opening or probing took longer than 4 s" in messages["hang.mp4"]
    probes = sorted(p.name for p in (tmp_path / "out" / "probe").iterdir())
    assert probes == sorted(n.replace(".mp4", ".json") for n in (*GOOD, "truncated.mp4"))
    assert read_json(tmp_path / "out" / "probe" / "rotated.json")["rotation"] == 90

    processed = sorted(GOOD)
    with h5py.File(tmp_path / "out" / "clips.h5", "r") as handle:
        clips = handle["clips"]
        assert clips.shape == (5, 8, 32, 40, 3) and clips.chunks == (1, 8, 32, 40, 3)
        assert [v.decode() for v in handle["videos"][()]] == processed
        for row, name in enumerate(processed):
            count = int(frame.set_index("video").loc[name, "frame_count"])
            indices = sample_indices(count, 25.0, 8, "uniform")
            assert handle["frame_indices"][row].tolist() == indices.tolist()
            expected = resize_clip(read_frames(videos[name], indices).frames, (32, 40))
            np.testing.assert_array_equal(clips[row], expected)
    index = pd.read_csv(tmp_path / "out" / "index.csv")
    assert index["video"].tolist() == processed and index["row"].tolist() == list(range(5))
    assert index.loc[0, "frame_indices"].split()[:2] == ["3", "11"]  # cfr_bframes: 60 frames


def test_outputs_are_byte_identical_across_runs_and_worker_counts(tmp_path, videos):
    folder = _folder(tmp_path, videos, ("cfr_bframes.mp4", "vfr.mp4", "zero.mp4"))
    options = FrameOptions(num_frames=6, sampling="fps", target_fps=5.0)
    for run, workers in (("a", 1), ("b", 2)):
        extract_frames(folder, tmp_path / run, options, workers=workers, show_progress=False)
    for name in ("clips.h5", "index.csv", "process_list.csv", "probe/vfr.json"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name


def test_native_size_mismatch_and_too_short(tmp_path, videos):
    folder = _folder(tmp_path, videos, ("cfr_bframes.mp4",))
    write_mp4(folder / "small.mp4", pattern_frames(10, 32, 32), fps=25)
    options = FrameOptions(num_frames=12, sampling="dense", short_policy="error")
    frame = extract_frames(folder, tmp_path / "out", options, show_progress=False).set_index(
        "video"
    )
    assert frame.loc["cfr_bframes.mp4", "status"] == "processed"
    assert frame.loc["small.mp4", "status"] == "too_short"
    assert "needs 12 frames" in frame.loc["small.mp4", "message"]
    options = FrameOptions(num_frames=4)
    frame = extract_frames(folder, tmp_path / "out", options, show_progress=False).set_index(
        "video"
    )
    assert frame.loc["small.mp4", "status"] == "size_mismatch"
    assert "32x32 differs from 64x48 of cfr_bframes.mp4" in frame.loc["small.mp4", "message"]
    with h5py.File(tmp_path / "out" / "clips.h5", "r") as handle:
        assert handle["clips"].shape == (1, 4, 48, 64, 3)


def test_an_empty_batch_writes_empty_outputs(tmp_path):
    (tmp_path / "videos").mkdir()
    frame = extract_frames(tmp_path / "videos", tmp_path / "out", show_progress=False)
    assert frame.empty
    with h5py.File(tmp_path / "out" / "clips.h5", "r") as handle:
        assert handle["clips"].shape[0] == 0


def test_options_from_params():
    section = {
        "num_frames": 8,
        "sampling": "fps",
        "stride": 1,
        "target_fps": 4.0,
        "short_policy": "wrap",
        "size": [112, 112],
        "resize_mode": "crop",
        "timeout_s": 60,
        "extensions": [".mp4"],
    }
    options = FrameOptions.from_params(section)
    assert options.size == (112, 112) and options.extensions == (".mp4",)
    assert FrameOptions.from_params({**section, "size": None}).size is None
    with pytest.raises(ValueError, match=r"unknown video frames option\(s\) \['frames'\]"):
        FrameOptions.from_params({**section, "frames": 3})
    with pytest.raises(ValueError, match="sampling 'fps' needs a positive target_fps"):
        FrameOptions.from_params({**section, "target_fps": None})
    with pytest.raises(ValueError, match=r"size must be \[H, W\]"):
        FrameOptions.from_params({**section, "size": [112]})
    with pytest.raises(ValueError, match="no such folder"):
        extract_frames("/nonexistent/videos", "/tmp/out", options)
