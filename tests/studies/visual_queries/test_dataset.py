"""The study's view of the video family's outputs: clips, scenes, splits, failed videos."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from reprolab.preprocess.video.frames import FrameOptions, extract_frames
from reprolab.preprocess.video.synth import render_video
from reprolab.studies.visual_queries.dataset import load_corpus, split

from .conftest import FRAMES, SCENE


def test_clips_are_the_rendered_scenes_through_mp4(corpus):
    assert len(corpus.names) == 40 and corpus.failed == ()
    name = corpus.names[5]
    rendered = render_video(corpus.scenes[name], corpus.spec).astype(int)
    assert np.abs(corpus.clip(name).astype(int) - rendered).max() <= 2


def test_split_is_seeded_and_disjoint(corpus):
    a, b = split(corpus.names, 0, 10), split(corpus.names, 1, 10)
    assert a == split(corpus.names, 0, 10) and a != b
    assert not set(a["train"]) & set(a["test"]) and len(a["test"]) == 10
    with pytest.raises(ValueError, match="n_test=40"):
        split(corpus.names, 0, 40)


def test_a_corrupt_video_is_left_out_and_counted(corpus_dirs, tmp_path):
    raw, _ = corpus_dirs
    videos = tmp_path / "videos"
    shutil.copytree(raw / "videos", videos)
    (videos / "scene_00003.mp4").write_bytes(b"")
    extract_frames(
        videos, tmp_path / "frames", FrameOptions.from_params(FRAMES), show_progress=False
    )
    loaded = load_corpus(raw, tmp_path / "frames", SCENE)
    assert loaded.failed == ("scene_00003",)
    assert "scene_00003" not in loaded.names and len(loaded.names) == 39
