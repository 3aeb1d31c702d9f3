"""On-disk format of one ssg run: metrics.json (scalars), curves.h5 (per epoch), timing.json.

curves.h5 holds epoch, train_loss, bag_auc and instance_auc (test set after each epoch).
timing.json holds the wall-clock training seconds; it is kept out of metrics.json because it
is the one output that differs between identical reruns. Every file is written atomically and
metrics.json last, so its presence marks a finished run.
"""

from __future__ import annotations

from pathlib import Path

from reprolab.core.io import read_h5, read_json, write_h5, write_json
from reprolab.studies.ssg.train import RunResult


def write_run(
    metrics_path: str | Path,
    curves_path: str | Path,
    result: RunResult,
    timing_path: str | Path | None = None,
) -> None:
    """Write curves, then timing (if a path is given), then metrics."""
    write_h5(curves_path, result.curves)
    if timing_path is not None:
        write_json(timing_path, {"train_seconds": result.seconds})
    write_json(metrics_path, result.metrics)


def read_run_metrics(path: str | Path) -> dict[str, float]:
    """The scalar metrics of one run, with a clear error when a metric is missing."""
    metrics = read_json(path)
    missing = {"bag_auc", "bag_accuracy", "instance_auc"} - set(metrics)
    if missing:
        raise ValueError(f"{path}: run metrics lack {sorted(missing)}")
    return metrics


def read_run_curves(path: str | Path) -> dict:
    """The per-epoch curves of one run."""
    return read_h5(path)
