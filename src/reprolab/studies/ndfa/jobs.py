"""The ndfa jobs around one training run: check the params, tune, apply the tuned values.

* `check_params` (the rule file calls it): every task and method has a tuning grid, all grids
  have the same number of points (every method gets the same tuning budget), every axis is a
  known tunable key and every grid sets the main learning rate, which params.yaml does not.
* `tune_method` (one `ndfa_tune_method` job per task × method): trains the method at every
  grid point on every tuning seed, with the table's budget (epochs, batch), on the training
  part of the tuning seed's split less a validation set (`data.validation_split`; the test
  set is never read), scores the final validation accuracy (%) and lets `core.tuning.tune`
  select the best mean. The record's `method` is `<task>/<method>`, the unit that is tuned
  (the curves' series name), so the study's tuning summary keeps every task.
* `tuned_config` (every `ndfa_train` job): the run's train and surrogate settings with the
  values its (task, method) record selected.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from reprolab.core.tuning import grid_points, tune
from reprolab.studies.ndfa.data import Split, validation_split

TUNABLE: dict[str, tuple[str, str]] = {
    "lr": ("train", "lr"),
    "surrogate_lr": ("surrogate", "lr"),
}
"""Grid axis -> (settings group, key) it sets: the main optimiser's learning rate (which only
the tuning sets: the schema forbids `ndfa.train.lr`) and the learning rate of a learned
feedback's surrogates (overriding `ndfa.surrogate.lr` for that method)."""
LEARNED = ("linfa", "linfa_zero", "ndfa")
"""Methods with learned feedback: only they have surrogate settings to tune."""
REQUIRED_AXES = ("lr",)
"""Axes every grid must have: params.yaml sets no main learning rate, the tuning does."""
METRIC = "validation accuracy (%)"


def unit(task: str, method: str) -> str:
    """The name of one tuned unit, as a tuning record's `method` and a curves series."""
    return f"{task}/{method}"


def check_params(params: Mapping[str, Any]) -> None:
    """Reject tuning settings the schema cannot judge; the message names the key."""
    grids = params["tune"]["grid"]
    tasks, methods = list(params["tasks"]), list(params["methods"])
    if sorted(grids) != sorted(tasks):
        raise ValueError(f"ndfa.tune.grid: needs one entry per task {tasks}, got {list(grids)}")
    sizes = {}
    for task in tasks:
        missing = [m for m in methods if m not in grids[task]]
        if missing:
            raise ValueError(f"ndfa.tune.grid.{task}: no grid for method(s) {missing}")
        for method in methods:
            grid = grids[task][method]
            key = f"ndfa.tune.grid.{task}.{method}"
            for axis in grid:
                if axis not in TUNABLE:
                    raise ValueError(f"{key}.{axis}: unknown axis; tunable are {list(TUNABLE)}")
                if TUNABLE[axis][0] == "surrogate" and method not in LEARNED:
                    raise ValueError(f"{key}.{axis}: {method} has no learned surrogate")
            for axis in REQUIRED_AXES:
                if axis not in grid:
                    raise ValueError(f"{key}: needs the axis '{axis}'")
            sizes[unit(task, method)] = len(grid_points(grid))
    if len(set(sizes.values())) > 1:
        raise ValueError(
            f"ndfa.tune.grid: every task and method needs the same number of grid points (the "
            f"same tuning budget), got {sizes}"
        )


def apply_values(
    train: Mapping[str, Any], surrogate: Mapping[str, Any], values: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Copies of the train and surrogate settings with the grid values `values` set."""
    groups = {"train": dict(train), "surrogate": dict(surrogate)}
    for axis, value in values.items():
        if axis not in TUNABLE:
            raise ValueError(f"unknown tuning axis {axis!r}; tunable are {list(TUNABLE)}")
        group, key = TUNABLE[axis]
        groups[group][key] = value
    return groups["train"], groups["surrogate"]


def tune_method(
    task_name: str,
    task: Mapping[str, Any],
    method: str,
    train: Mapping[str, Any],
    surrogate: Mapping[str, Any],
    tuning: Mapping[str, Any],
    splits: Mapping[int, Split],
    threads: int,
) -> dict[str, Any]:
    """The tuning record of one (task, method): every point of `tuning["grid"][task][method]`
    trained on each tuning seed's split (`splits`, {tuning seed: split}) less its validation
    set, scored by the final validation accuracy (%); a run whose training loss is not finite
    scores NaN and is never selected."""
    from reprolab.studies.ndfa.train import train_run  # torch: not at the rule file's import

    fraction = tuning["validation_fraction"]
    data = {
        seed: validation_split(dict(task), split, fraction, seed) for seed, split in splits.items()
    }

    def evaluate(values: dict[str, Any], seed: int) -> float:
        train_cfg, surrogate_cfg = apply_values(train, surrogate, values)
        result = train_run(
            dict(task), method, train_cfg, surrogate_cfg, data[seed], seed, threads, False
        )
        if not math.isfinite(result.metrics["final_loss"]):
            return math.nan
        return 100.0 * result.metrics["test_accuracy"]

    record = tune(
        unit(task_name, method),
        tuning["grid"][task_name][method],
        evaluate,
        list(data),
        METRIC,
        "max",
    )
    record["budget"] = {"epochs": train["epochs"], "batch_size": train["batch_size"]}
    record["validation_fraction"] = fraction
    return record


def tuned_config(
    record: Mapping[str, Any],
    task_name: str,
    method: str,
    train: Mapping[str, Any],
    surrogate: Mapping[str, Any],
) -> tuple[dict[str, Any], dict[str, Any]]:
    """The train and surrogate settings of a (task, method) run with its record's selected
    values; a record of another unit is an error."""
    if record["method"] != unit(task_name, method):
        raise ValueError(
            f"tuning record of {record['method']!r} given to a run of {unit(task_name, method)!r}"
        )
    return apply_values(train, surrogate, record["selected"])
