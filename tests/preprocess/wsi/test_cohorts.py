"""Where the workflow finds a cohort's slides."""

from __future__ import annotations

from reprolab.preprocess.wsi.cohorts import generated_slides, slides_dir

COHORTS = {
    "synthetic": {"seed": 0, "synthetic": {"n_slides": 2}},
    "camelyon16": {"slides": "data/raw/camelyon16/images"},
}


def test_synthetic_slides_are_a_workflow_output_and_real_ones_a_named_folder():
    assert slides_dir(COHORTS, "synthetic") == "data/raw/wsi/synthetic/slides"
    assert generated_slides(COHORTS, "synthetic") == {"slides": "data/raw/wsi/synthetic/slides"}
    assert slides_dir(COHORTS, "camelyon16") == "data/raw/camelyon16/images"
    assert generated_slides(COHORTS, "camelyon16") == {}
