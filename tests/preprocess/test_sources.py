"""Where the workflow finds a family's inputs: generated under data/raw, or a named folder."""

from __future__ import annotations

from reprolab.preprocess.sources import generated_source, source_dir

COHORTS = {
    "synthetic": {"seed": 0, "synthetic": {"n_slides": 2}},
    "camelyon16": {"slides": "data/raw/camelyon16/images"},
}


def test_synthetic_inputs_are_a_workflow_output_and_real_ones_a_named_folder():
    assert source_dir(COHORTS, "synthetic", "slides", "wsi") == "data/raw/wsi/synthetic/slides"
    assert generated_source(COHORTS, "synthetic", "slides", "wsi") == {
        "slides": "data/raw/wsi/synthetic/slides"
    }
    assert source_dir(COHORTS, "camelyon16", "slides", "wsi") == "data/raw/camelyon16/images"
    assert generated_source(COHORTS, "camelyon16", "slides", "wsi") == {}
    videos = {"sprites": {"seed": 0, "synthetic": {}}}
    assert source_dir(videos, "sprites", "videos", "video") == "data/raw/video/sprites/videos"
