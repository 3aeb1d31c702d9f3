"""The files a strap job reads per task, named from params."""

from __future__ import annotations

import pytest

from reprolab.studies.strap.workflow_io import task_files

PATTERNS = {
    "frames": "data/video/{dataset}/frames",
    "manifest": "data/raw/video/{dataset}/manifest.csv",
}

VIDEO_DATASETS = {
    "synthmotion": {"seed": 0, "synthetic": {"n_videos": 48}},
    "synthmotion_coarse": {"seed": 1, "synthetic": {"n_videos": 36}},
    "ssv2": {"videos": "data/raw/something-something-v2/videos"},
}


def test_synthetic_datasets_default_to_their_manifest():
    tasks = {"fine": {"dataset": "synthmotion"}, "coarse": {"dataset": "synthmotion_coarse"}}
    assert task_files({"tasks": tasks}, VIDEO_DATASETS, **PATTERNS) == {
        "fine": {
            "frames": "data/video/synthmotion/frames",
            "labels": "data/raw/video/synthmotion/manifest.csv",
        },
        "coarse": {
            "frames": "data/video/synthmotion_coarse/frames",
            "labels": "data/raw/video/synthmotion_coarse/manifest.csv",
        },
    }


def test_an_explicit_labels_table_is_used():
    tasks = {
        "fine": {"dataset": "ssv2", "labels": "data/raw/ssv2/strap_labels.csv"},
        "coarse": {"dataset": "synthmotion", "labels": "elsewhere/labels.csv"},
    }
    files = task_files({"tasks": tasks}, VIDEO_DATASETS, **PATTERNS)
    assert files["fine"] == {
        "frames": "data/video/ssv2/frames",
        "labels": "data/raw/ssv2/strap_labels.csv",
    }
    assert files["coarse"]["labels"] == "elsewhere/labels.csv"


def test_an_unknown_dataset_is_refused():
    tasks = {"fine": {"dataset": "kinetics400"}}
    with pytest.raises(ValueError, match=r"strap\.tasks\.fine\.dataset: 'kinetics400'"):
        task_files({"tasks": tasks}, VIDEO_DATASETS, **PATTERNS)


def test_a_real_dataset_without_labels_is_refused():
    tasks = {"fine": {"dataset": "synthmotion"}, "coarse": {"dataset": "ssv2"}}
    with pytest.raises(ValueError, match=r"strap\.tasks\.coarse\.labels: .*'ssv2'"):
        task_files({"tasks": tasks}, VIDEO_DATASETS, **PATTERNS)


def test_a_null_labels_entry_means_the_manifest():
    tasks = {"fine": {"dataset": "synthmotion", "labels": None}}
    files = task_files({"tasks": tasks}, VIDEO_DATASETS, **PATTERNS)
    assert files["fine"]["labels"] == "data/raw/video/synthmotion/manifest.csv"
