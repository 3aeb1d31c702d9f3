"""On-disk format of one ssg run: metrics.json (scalars) and curves.h5 (per epoch).

curves.h5 holds epoch, train_loss, bag_auc and instance_auc (test set after each epoch). The
wall-clock training seconds go to the job's log, not to a run file: they differ between
identical reruns, and the runs folder is a DVC output whose hash must reproduce. Every file is
written atomically and metrics.json last, so its presence marks a finished run.

The module loads no torch (`RunResult` is only a type here), so the summary (`results`) and
the report read runs with these readers too.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from reprolab.core.io import read_h5, read_json, write_h5, write_json

if TYPE_CHECKING:
    from reprolab.studies.ssg.train import RunResult

RUN_METRICS = ("bag_auc", "bag_accuracy", "instance_auc")
"""The scalars every run's metrics.json must hold."""


def write_run(metrics_path: str | Path, curves_path: str | Path, result: RunResult) -> None:
    """Write curves, then metrics."""
    write_h5(curves_path, result.curves)
    write_json(metrics_path, result.metrics)


def read_run_metrics(path: str | Path) -> dict[str, float]:
    """The scalar metrics of one run, with a clear error when a metric is missing."""
    metrics = read_json(path)
    missing = set(RUN_METRICS) - set(metrics)
    if missing:
        raise ValueError(f"{path}: run metrics lack {sorted(missing)}")
    return metrics


def read_run_curves(path: str | Path) -> dict:
    """The per-epoch curves of one run."""
    return read_h5(path)
