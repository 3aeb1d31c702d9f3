"""On-disk formats of the ndfa study: data splits and training runs.

A split is `data/ndfa/<task>/split_seed<k>.h5` with datasets X_train, y_train, X_test, y_test and
root attributes n_classes and input_shape. A run is a `metrics.json` (scalars) beside a
`curves.h5` (per-epoch arrays: epoch, test_accuracy, train_loss, alignment [epoch, layer]).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from reprolab.core.io import read_h5, read_json, write_h5, write_json
from reprolab.studies.ndfa.data import Split
from reprolab.studies.ndfa.train import RunResult

_ARRAYS = ("X_train", "y_train", "X_test", "y_test")


def write_split(path: str | Path, split: Split) -> None:
    """Write a split to HDF5."""
    write_h5(
        path,
        {name: getattr(split, name) for name in _ARRAYS},
        attrs={
            "n_classes": split.n_classes,
            "input_shape": np.asarray(split.input_shape, dtype=np.int64),
        },
    )


def read_split(path: str | Path) -> Split:
    """Read a split written by `write_split`."""
    import h5py

    arrays = read_h5(path)
    with h5py.File(path, "r") as handle:
        n_classes = int(handle.attrs["n_classes"])
        input_shape = tuple(int(v) for v in handle.attrs["input_shape"])
    return Split(
        **{name: arrays[name] for name in _ARRAYS}, n_classes=n_classes, input_shape=input_shape
    )


def write_run(metrics_path: str | Path, curves_path: str | Path, result: RunResult) -> None:
    """Write a run's curves first, then its metrics (the metrics file marks a finished run)."""
    write_h5(curves_path, result.curves)
    write_json(metrics_path, result.metrics)


def read_run_metrics(path: str | Path) -> dict[str, float]:
    """The scalar metrics of one run."""
    return read_json(path)
