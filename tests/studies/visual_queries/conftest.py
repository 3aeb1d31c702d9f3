"""A small sprite corpus made through the real pipeline: mp4 files, frame stage, annotations."""

from __future__ import annotations

import pytest

from reprolab.preprocess.video.frames import FrameOptions, extract_frames
from reprolab.preprocess.video.synth import write_scenes
from reprolab.studies.visual_queries.dataset import load_corpus
from reprolab.studies.visual_queries.jobs import with_values

SCENE = {
    "size": 32,
    "frames": 16,
    "radius": 4.5,
    "objects": [2, 4],
    "speed": [1.0, 2.0],
    "occluder_probability": 0.5,
    "occluder_width": 5,
    "collision_window": [3, 11],
}
ENCODING = {"fps": 8, "crf": 0, "gop": 16, "pix_fmt": "yuv444p", "bframes": 0}
FRAMES = {"num_frames": 16, "sampling": "dense", "stride": 1, "short_policy": "error"}
PARAMS = {
    "n_test": 12,
    "items": {"vfp_context": 8, "vfp_horizon": 6},
    "render": {"jitter": 1.0, "scale_jitter": 0.1},
    "lengths": {"question": 16, "option": 16},
    "blind_visual": {"steps": 3, "batch_size": 8},
    "captioner": {"steps": 3, "batch_size": 16},
    "tinyvlm": {
        "dim": 16,
        "layers": 1,
        "heads": 2,
        "temperature": 0.1,
        "weight_decay": 0.01,
        "visual_share": 0.5,
        "textheavy_visual_share": 0.1,
        "align": {"steps": 2, "batch_size": 8, "temperature": 0.1},
        "tune": {"steps": 3, "batch_size": 4, "freeze_encoders": True},
    },
    "hf_vlm": {"path": "", "device": "cpu", "dtype": "float32"},
    "tune": {
        "validation_videos": 4,
        "grid": {
            "blind": {"lr": [0.001, 0.003]},
            "caption_reason": {"lr": [0.001, 0.003]},
            "tinyvlm": {"lr": [0.001, 0.003]},
        },
    },
}
"""The study's params as params.yaml shapes them: no learning rate (the tuning records set it)."""
SELECTED = {"blind": {"lr": 0.001}, "caption_reason": {"lr": 0.003}, "tinyvlm": {"lr": 0.001}}
"""Selected values as the tuning records give them (core.tuning.selected)."""


def _with_selected(params: dict, selected: dict) -> dict:
    for method, values in selected.items():
        params = with_values(params, method, values)
    return params


TRAINED = _with_selected(PARAMS, SELECTED)
"""PARAMS with SELECTED set, for the tests that call a trainer directly."""


@pytest.fixture(scope="session")
def corpus_dirs(tmp_path_factory):
    """(raw dir, frames dir) of 40 scenes written as mp4 and decoded by the frame stage."""
    from reprolab.preprocess.video.synth import SceneSpec

    root = tmp_path_factory.mktemp("sprites")
    write_scenes(root / "raw", 40, 3, SceneSpec.from_params(SCENE), ENCODING, show_progress=False)
    extract_frames(
        root / "raw/videos", root / "frames", FrameOptions.from_params(FRAMES), show_progress=False
    )
    return root / "raw", root / "frames"


@pytest.fixture(scope="session")
def corpus(corpus_dirs):
    return load_corpus(*corpus_dirs, SCENE)
