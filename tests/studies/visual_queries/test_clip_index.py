"""The frame stage's index read back as clip frames per video stem (webm names as SSv2 ships)."""

from __future__ import annotations

import numpy as np
import pytest

from reprolab.studies.visual_queries.clip_index import read_clip_index

from .real_data import decode, write_webm


def test_webm_clips_are_keyed_by_id_and_failures_listed(tmp_path):
    videos = tmp_path / "videos"
    videos.mkdir()
    write_webm(videos / "78687.webm", 24)
    write_webm(videos / "1420.webm", 10)
    (videos / "555.webm").write_bytes(b"not a video")
    index = read_clip_index(decode(videos, tmp_path / "frames", 4, ".webm"))
    assert sorted(index.frames) == ["1420", "78687"] and index.failed == ("555",)
    np.testing.assert_array_equal(index.frames["78687"], [3, 9, 15, 21])


def test_a_missing_or_malformed_index_is_named(tmp_path):
    with pytest.raises(ValueError, match="index.csv: missing"):
        read_clip_index(tmp_path)
    (tmp_path / "index.csv").write_text("video,row,frame_indices\n1.webm,0,0 x 2\n")
    (tmp_path / "process_list.csv").write_text("video,status\n1.webm,processed\n")
    with pytest.raises(ValueError, match="index.csv, line 2: frame_indices '0 x 2'"):
        read_clip_index(tmp_path)
    (tmp_path / "process_list.csv").write_text("video\n1.webm\n")
    with pytest.raises(ValueError, match="process_list.csv: no column 'status'"):
        read_clip_index(tmp_path)
