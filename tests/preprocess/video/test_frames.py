"""extract_frames over a folder with good and bad videos: statuses, clips.h5, determinism, and
the worker processes (reused across videos, replaced after a timeout or a crash, ended with a
killed batch)."""

from __future__ import annotations

import os
import resource
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path

import h5py
import numpy as np
import pandas as pd
import pytest

from reprolab.core.io import read_json
from reprolab.preprocess.video import frames
from reprolab.preprocess.video.decode import read_frames
from reprolab.preprocess.video.encode import write_mp4
from reprolab.preprocess.video.frames import FrameOptions, extract_frames, process_video
from reprolab.preprocess.video.resize import resize_clip
from reprolab.preprocess.video.sampling import sample_indices
from tests.core.test_parent_death import kill_once_started, needs_proc
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


def _copies(tmp_path: Path, videos: dict[str, Path], names: dict[str, str]) -> Path:
    """A folder with a copy of test video `names[new]` as `new`, for each new name."""
    folder = tmp_path / "videos"
    folder.mkdir()
    for new, name in names.items():
        shutil.copy(videos[name], folder / new)
    return folder


def recording_pids(path: Path, probe_path: Path, options: FrameOptions) -> dict:
    """`process_video` that first writes its worker's pid to `pids/<stem>` in the output folder,
    then ends the worker on `crash.mp4` (`os._exit(3)`) and `segv.mp4` (SIGSEGV), as a crash in
    a native decoder would. The parent sends it to the workers by reference: each fresh worker
    imports this test module to run it."""
    pids = probe_path.parent.parent / "pids"
    pids.mkdir(exist_ok=True)
    (pids / path.stem).write_text(str(os.getpid()))
    if path.stem == "crash":
        os._exit(3)
    if path.stem == "segv":
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # no core file in the working folder
        os.kill(os.getpid(), signal.SIGSEGV)
    return process_video(path, probe_path, options)


def worker_pids(out_dir: Path) -> dict[str, int]:
    """Video stem -> pid of the worker that was given it (written by `recording_pids`)."""
    return {p.name: int(p.read_text()) for p in (out_dir / "pids").iterdir()}


def in_process_last_first(jobs: list, options: FrameOptions, workers: int) -> Iterator:
    """A reference for `frames._results`: every video processed here, in this process, with no
    worker, and handed over last first (the writer must put them back in name order)."""
    results = [process_video(path, probe_path, options) for path, probe_path in jobs]
    yield from reversed(list(enumerate(results)))


def outputs(out_dir: Path) -> dict[str, bytes]:
    """Relative path -> bytes of every file under `out_dir`."""
    return {str(p.relative_to(out_dir)): p.read_bytes() for p in out_dir.rglob("*") if p.is_file()}


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


def test_outputs_match_an_in_process_reference_for_any_worker_count(tmp_path, videos, monkeypatch):
    """Nine videos, good and bad, through one worker and through two: every output file is the
    same bytes as when each video is processed in this process and handed over in reverse."""
    folder = _folder(tmp_path, videos, (*GOOD, *BAD))
    options = FrameOptions(num_frames=8, size=(32, 40))
    with monkeypatch.context() as patch:
        patch.setattr(frames, "_results", in_process_last_first)
        extract_frames(folder, tmp_path / "reference", options, show_progress=False)
    reference = outputs(tmp_path / "reference")
    assert len(reference) == 3 + 6  # clips.h5, index.csv, process_list.csv and 6 probe files
    for workers in (1, 2):
        out = tmp_path / f"workers{workers}"
        extract_frames(folder, out, options, workers=workers, show_progress=False)
        assert outputs(out) == reference, workers


def test_a_worker_serves_many_videos(tmp_path, videos, monkeypatch):
    """Seven videos (two that fail) go to one worker process with `workers=1`, to two with
    `workers=2`, and the results are those of unpatched runs."""
    folder = _folder(tmp_path, videos, (*GOOD, "truncated.mp4", "text.mp4"))
    options = FrameOptions(num_frames=4)
    expected = extract_frames(folder, tmp_path / "plain", options, show_progress=False)
    monkeypatch.setattr(frames, "process_video", recording_pids)
    for workers in (1, 2):
        out = tmp_path / f"workers{workers}"
        frame = extract_frames(folder, out, options, workers=workers, show_progress=False)
        pd.testing.assert_frame_equal(frame, expected)
        pids = worker_pids(out)
        assert len(pids) == 7 and len(set(pids.values())) == workers, pids


def test_a_timed_out_worker_is_replaced(tmp_path, videos, monkeypatch):
    """With one worker: the worker that hangs on the second video is killed at its deadline and
    a fresh worker does the two videos after it."""
    folder = _copies(tmp_path, videos, {"a.mp4": "cfr_bframes.mp4", "m.mp4": "vfr.mp4",
                                        "z.mp4": "long_gop.mp4"})  # fmt: skip
    os.mkfifo(folder / "hang.mp4")  # opening it blocks forever: nobody writes to it
    monkeypatch.setattr(frames, "process_video", recording_pids)
    options = FrameOptions(num_frames=4, timeout_s=4.0)
    frame = extract_frames(folder, tmp_path / "out", options, show_progress=False)
    statuses = dict(zip(frame["video"], frame["status"], strict=True))
    assert statuses == {"a.mp4": "processed", "hang.mp4": "timeout", "m.mp4": "processed",
                        "z.mp4": "processed"}  # fmt: skip
    pids = worker_pids(tmp_path / "out")
    assert pids["a"] == pids["hang"] != pids["m"] == pids["z"], pids


def test_a_crashed_worker_is_replaced(tmp_path, videos, monkeypatch):
    """With one worker: a worker that exits (code 3) or segfaults on a video gives that video
    `failed_decode` with its exit code, and a fresh worker does the next video."""
    good = {name: "cfr_bframes.mp4" for name in ("a.mp4", "m.mp4", "z.mp4")}
    folder = _copies(tmp_path, videos, {**good, "crash.mp4": "vfr.mp4", "segv.mp4": "vfr.mp4"})
    monkeypatch.setattr(frames, "process_video", recording_pids)
    frame = extract_frames(
        folder, tmp_path / "out", FrameOptions(num_frames=4), show_progress=False
    )
    rows = frame.set_index("video")
    assert rows["status"].to_dict() == {"a.mp4": "processed", "crash.mp4": "failed_decode",
                                        "m.mp4": "processed", "segv.mp4": "failed_decode",
                                        "z.mp4": "processed"}  # fmt: skip
    assert rows.loc["crash.mp4", "message"] == "crash.mp4: the decoding process died (exit code 3)"
    assert rows.loc["segv.mp4", "message"] == (
        f"segv.mp4: the decoding process died (exit code {-signal.SIGSEGV})"
    )
    assert rows["row"].tolist() == [0, -1, 1, -1, 2]
    pids = worker_pids(tmp_path / "out")
    assert pids["a"] == pids["crash"] != pids["m"] == pids["segv"] != pids["z"], pids
    assert pids["z"] != pids["a"]


@needs_proc
@pytest.mark.timeout(120)
def test_killing_a_batch_leaves_no_worker_behind(tmp_path, videos):
    """`extract_frames` with two workers, one of them hung on a named pipe, in a session of its
    own is SIGKILLed once both workers run: the workers, the forkserver and the resource tracker
    all end within the liveness wait (`core.parent_death`)."""
    folder = _folder(tmp_path, videos, ("cfr_bframes.mp4",))
    os.mkfifo(folder / "hang.mp4")
    code = (
        "from reprolab.preprocess.video.frames import FrameOptions, extract_frames\n"
        f"extract_frames({str(folder)!r}, {str(tmp_path / 'out')!r}, FrameOptions(timeout_s=600), "
        "workers=2, show_progress=False)\n"
    )
    kill_once_started(code, tmp_path / "run.log", children=2)


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
