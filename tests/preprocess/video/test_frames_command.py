"""`reprolab video frames` as a user types it: same files as the library call."""

from __future__ import annotations

import shutil

from reprolab.cli import main
from reprolab.preprocess.video.frames import FrameOptions, extract_frames


def test_frames_command_writes_what_the_library_writes(tmp_path, videos, capsys):
    folder = tmp_path / "videos"
    folder.mkdir()
    for name in ("cfr_bframes.mp4", "edit_list.mp4", "text.mp4"):
        shutil.copy(videos[name], folder / name)
    argv = ["video", "frames", "--videos", str(folder), "--out", str(tmp_path / "cli")]
    argv += ["--num-frames", "5", "--sampling", "dense", "--stride", "3", "--size", "24", "32"]
    assert main([*argv, "--resize-mode", "stretch", "--workers", "2", "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "processed: 2" in out and "failed_open: 1" in out and "3 videos" in out
    options = FrameOptions(num_frames=5, sampling="dense", stride=3, size=(24, 32),
                           resize_mode="stretch")  # fmt: skip
    extract_frames(folder, tmp_path / "lib", options, show_progress=False)
    for name in ("clips.h5", "index.csv", "process_list.csv", "probe/edit_list.json"):
        assert (tmp_path / "cli" / name).read_bytes() == (tmp_path / "lib" / name).read_bytes()


def test_frames_command_rejects_bad_options(tmp_path, capsys):
    (tmp_path / "videos").mkdir()
    argv = ["video", "frames", "--videos", str(tmp_path / "videos"), "--out", str(tmp_path / "o")]
    assert main([*argv, "--sampling", "fps"]) == 2
    assert "sampling 'fps' needs a positive target_fps" in capsys.readouterr().err
    assert main([*argv, "--num-frames", "0"]) == 2
    assert "num_frames must be an integer in [1, 1024], got 0" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_frames_command_refuses_before_writing_anything(tmp_path, videos, capsys):
    """A missing --videos left an empty probe/ behind; --out naming a file ended in a
    NotADirectoryError traceback; --num-frames 100000 on a short clip wrote 256 MB."""
    out = tmp_path / "out"
    assert main(["video", "frames", "--videos", str(tmp_path / "none"), "--out", str(out)]) == 2
    assert capsys.readouterr().err == f"error: --videos {tmp_path}/none: no such folder\n"
    assert not out.exists()
    afile = tmp_path / "afile"
    afile.write_text("keep")
    assert main(["video", "frames", "--videos", str(videos), "--out", str(afile)]) == 2
    expected = f"error: --out {afile}: exists and is not a folder; expected an output folder\n"
    assert capsys.readouterr().err == expected and afile.read_text() == "keep"
    argv = ["video", "frames", "--videos", str(videos), "--out", str(out)]
    assert main([*argv, "--num-frames", "100000"]) == 2
    assert "num_frames must be an integer in [1, 1024], got 100000" in capsys.readouterr().err
    assert main([*argv, "--size", "8", "100000"]) == 2
    assert "size W must be an integer in [1, 4096]" in capsys.readouterr().err
    assert main([*argv, "--timeout", "inf"]) == 2
    assert "timeout_s must be a finite number, got inf" in capsys.readouterr().err
    assert not out.exists()
