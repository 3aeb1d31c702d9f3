"""A run's files: metrics.json and curves.h5 round-trip; bad metrics are named."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from reprolab.core.io import write_json
from reprolab.studies.ssg.storage import read_run_curves, read_run_metrics, write_run
from reprolab.studies.ssg.train import RunResult


def test_run_round_trip(tmp_path: Path):
    result = RunResult(
        metrics={"bag_auc": 0.9, "bag_accuracy": 0.8, "instance_auc": 0.95},
        curves={"epoch": np.arange(1, 4), "train_loss": np.array([0.7, 0.5, 0.4])},
        seconds=1.5,
    )
    write_run(tmp_path / "m.json", tmp_path / "c.h5", result)
    assert read_run_metrics(tmp_path / "m.json") == result.metrics
    curves = read_run_curves(tmp_path / "c.h5")
    assert np.array_equal(curves["train_loss"], result.curves["train_loss"])
    first = (tmp_path / "c.h5").read_bytes()
    write_run(tmp_path / "m.json", tmp_path / "c.h5", result)
    assert (tmp_path / "c.h5").read_bytes() == first  # no timestamps in HDF5


def test_missing_metric_is_named(tmp_path: Path):
    write_json(tmp_path / "m.json", {"bag_auc": 0.5})
    with pytest.raises(ValueError, match="instance_auc"):
        read_run_metrics(tmp_path / "m.json")
