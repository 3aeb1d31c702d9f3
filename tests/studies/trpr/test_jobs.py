"""The trpr jobs' files and values: a benchmark written and read back as a seed's stream, and
the tuned values each row trains with."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest
from PIL import Image

from reprolab.studies.trpr.jobs import load_stream, row_settings, row_values, write_benchmark

DIGITSTYLES = {
    "tasks": 2,
    "seed": 0,
    "styles": ["plain", "invert"],
    "split": [0.6, 0.25, 0.15],
    "shift": 1,
    "noise": 0.05,
}
PARAMS = {
    "model": {"experts_per_task": 2, "rank": 2, "first_adapted": 1, "router_temperature": 1.0},
    "train": {
        "epochs": 1,
        "batch_size": 32,
        "logit_scale": 16.0,
        "anchor_temperature": 0.1,
        "drift_bins": 2,
    },
}


def test_digitstyles_round_trips_as_a_seeds_stream(tmp_path: Path):
    path = tmp_path / "images.h5"
    write_benchmark("digitstyles", DIGITSTYLES, path)
    with h5py.File(path) as handle:
        assert handle.attrs["benchmark"] == "digitstyles"
        assert {"pretrain_images", "pretrain_digits"} <= set(handle)
    stream = load_stream(path, tasks=4, seed=3)
    assert stream.class_names[:3] == ("0/plain", "0/invert", "1/plain")
    assert stream.task_classes.shape == (4, 5)
    assert np.array_equal(stream.task_classes, load_stream(path, 4, seed=3).task_classes)
    assert not np.array_equal(stream.task_classes, load_stream(path, 4, seed=4).task_classes)
    with pytest.raises(ValueError, match="trpr.stream.tasks: 3 tasks"):
        load_stream(path, 3, seed=3)


def test_a_released_class_folder_becomes_a_stream(tmp_path: Path):
    root = tmp_path / "cub"
    for split in ("train", "test"):
        for k, name in enumerate(["a_bird", "b_bird"]):
            folder = root / split / name
            folder.mkdir(parents=True)
            Image.new("RGB", (10, 14), (40 * k, 90, 200)).save(folder / "1.png")
    path = tmp_path / "images.h5"
    write_benchmark("cub", {"tasks": 2, "root": str(root), "image_size": 8}, path)
    stream = load_stream(path, tasks=2, seed=0)
    assert stream.class_names == ("a_bird", "b_bird")
    assert stream.train_images.shape == (2, 8, 8, 3) and stream.train_images.dtype == np.uint8


def test_a_file_that_is_no_benchmark_is_refused(tmp_path: Path):
    path = tmp_path / "other.h5"
    with h5py.File(path, "w") as handle:
        handle["train_images"] = np.zeros(2)
    with pytest.raises(ValueError, match=r"other.h5: not a trpr benchmark file"):
        load_stream(path, 2, 0)


def test_rows_train_with_their_knob_and_borrow_moes_rate_where_they_tune_another():
    chosen = {"moe": {"lr": 0.003}, "trpr_inference": {"delta": 0.1}, "lwf": {"penalty_weight": 3}}
    assert row_values("moe", chosen) == {"lr": 0.003}
    assert row_values("trpr_inference", chosen) == {"delta": 0.1, "lr": 0.003}
    assert row_values("lwf", chosen) == {"penalty_weight": 3, "lr": 0.003}
    assert row_values("ncm", chosen) == {}
    with pytest.raises(ValueError, match=r"no tuning record for row 'ewc'"):
        row_values("ewc", chosen)
    settings = row_settings("trpr_inference", PARAMS, {"delta": 0.1, "lr": 0.003}, tasks=5)
    assert settings.experts == 10 and settings.delta == 0.1 and settings.lr == 0.003
    with pytest.raises(ValueError, match=r"trpr row 'trpr_inference': tuned values \['lr'\]"):
        row_settings("trpr_inference", PARAMS, {"lr": 0.003}, tasks=5)
