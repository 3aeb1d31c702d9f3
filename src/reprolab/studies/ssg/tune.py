"""Tuning of the ssg study inside the workflow: check the grids, tune a method, apply its values.

* `check_params` (the rule file calls it): every listed method has a grid, every grid has the
  same number of points (the same tuning budget), every axis is a known tunable key, `lambda`
  is tuned by grounding methods only, every grid sets the learning rate and every grounding
  grid sets λ (params.yaml sets neither: the schema forbids `train.lr` and
  `model.grounding.lambda`), and `tune.dataset` is one of the study's datasets.
* `tune_method` (one `ssg_tune` job per method): trains the method at every grid point on
  every tuning seed with the table's budget (epochs, batch size), on the tuning seed's
  training bags of `tune.dataset` less a stratified validation set (`validation_split`; the
  test bags are never read), scores the validation bag AUC after the last epoch and lets
  `core.tuning.tune` select the best mean. A run whose training loss is not finite scores NaN
  and is never selected.
* `tuned_params` (every `ssg_train` job): a method's model and train settings with the values
  its record selected.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from reprolab.core.determinism import derive_seed
from reprolab.core.tuning import check_equal_grids, tune

if TYPE_CHECKING:  # data and models import torch, which the rule file does not load
    from reprolab.studies.ssg.data import Bags

GROUNDING = ("nn_grounding", "balanced_ot", "ssg_uot")
"""models.GROUNDING (tested equal), restated so that the rule file's import needs no torch."""

TUNABLE: dict[str, tuple[str, ...]] = {
    "lr": ("train", "lr"),
    "weight_decay": ("train", "weight_decay"),
    "lambda": ("model", "grounding", "lambda"),
}
"""Grid axis -> the path of the setting it sets in {"model": ..., "train": ...}: Adam's
learning rate and weight decay, and the grounding weight λ (grounding methods only)."""
REQUIRED_AXES = ("lr",)
"""Axes every grid must have: params.yaml sets no learning rate, the tuning does."""
GROUNDING_AXES = ("lambda",)
"""Axes every grounding method's grid must have: params.yaml sets no λ, the tuning does."""
METRIC = "validation bag AUC"


def check_params(params: Mapping[str, Any]) -> None:
    """Reject tuning settings the schema cannot judge; the message names the key."""
    tuning = params["tune"]
    if tuning["dataset"] not in params["datasets"]:
        raise ValueError(
            f"ssg.tune.dataset: {tuning['dataset']!r} is not one of ssg.datasets "
            f"{list(params['datasets'])}"
        )
    sweep = params.get("sweep") or {}
    untuned = [m for m in sweep.get("methods", []) if m not in params["methods"]]
    if untuned:
        raise ValueError(
            f"ssg.sweep.methods: {untuned} not in ssg.methods, so no ssg_tune job tunes them"
        )
    grids = tuning["grid"]
    check_equal_grids(grids, params["methods"], "ssg.tune.grid")
    for method in params["methods"]:
        axes = list(grids[method])
        for axis in axes:
            if axis not in TUNABLE:
                raise ValueError(
                    f"ssg.tune.grid.{method}.{axis}: unknown axis; tunable are {list(TUNABLE)}"
                )
            if axis in GROUNDING_AXES and method not in GROUNDING:
                raise ValueError(f"ssg.tune.grid.{method}.{axis}: {method} has no grounding")
        required = REQUIRED_AXES + (GROUNDING_AXES if method in GROUNDING else ())
        for axis in required:
            if axis not in axes:
                raise ValueError(f"ssg.tune.grid.{method}: needs the axis '{axis}'")


def apply_values(
    model: Mapping[str, Any], train: Mapping[str, Any], values: Mapping[str, Any]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Copies of the model and train settings with the grid values `values` set."""
    groups = {"model": copy.deepcopy(dict(model)), "train": copy.deepcopy(dict(train))}
    for axis, value in values.items():
        if axis not in TUNABLE:
            raise ValueError(f"unknown tuning axis {axis!r}; tunable are {list(TUNABLE)}")
        group, *keys = TUNABLE[axis]
        target = groups[group]
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value
    return groups["model"], groups["train"]


def _subset(bags: Bags, index: np.ndarray) -> Bags:
    return type(bags)(
        [bags.X[i] for i in index],
        np.asarray(bags.y)[index],
        [bags.instance_labels[i] for i in index],
    )


def validation_split(bags: Bags, fraction: float, seed: int) -> tuple[Bags, Bags]:
    """(fit, validation) bags: per label, a random `fraction` of the bags (drawn from `seed`)
    is held out, so both parts keep both classes; bag order is kept within each part."""
    rng = np.random.default_rng(derive_seed(seed, "ssg", "validation"))
    y = np.asarray(bags.y)
    held = []
    for label in (0, 1):
        index = np.flatnonzero(y == label)
        n_val = int(round(fraction * len(index)))
        if not 0 < n_val < len(index):
            raise ValueError(
                f"validation fraction {fraction} of {len(index)} training bags of label "
                f"{label} leaves a part without that label"
            )
        held.append(rng.choice(index, size=n_val, replace=False))
    val = np.sort(np.concatenate(held))
    fit = np.setdiff1d(np.arange(len(bags)), val)
    return _subset(bags, fit), _subset(bags, val)


def tune_method(
    method: str,
    model: Mapping[str, Any],
    train: Mapping[str, Any],
    tuning: Mapping[str, Any],
    train_bags: Mapping[int, Bags],
    threads: int,
) -> dict[str, Any]:
    """The tuning record of `method`: every point of `tuning["grid"][method]` trained on each
    tuning seed's training bags (`train_bags`, {tuning seed: bags}) less a validation set and
    scored by the validation bag AUC after the last epoch."""
    from reprolab.studies.ssg.train import train_run  # torch: not at the rule file's import

    fraction = tuning["validation_fraction"]
    data = {seed: validation_split(bags, fraction, seed) for seed, bags in train_bags.items()}

    def evaluate(values: dict[str, Any], seed: int) -> float:
        model_cfg, train_cfg = apply_values(model, train, values)
        result = train_run(*data[seed], method, model_cfg, train_cfg, seed, threads)
        print(
            f"ssg tune {method} {values} seed{seed}: validation bag AUC "
            f"{result.metrics['bag_auc']:.4f} ({result.seconds:.1f} s)",
            flush=True,
        )
        if not math.isfinite(result.metrics["final_loss"]):
            return math.nan
        return result.metrics["bag_auc"]

    record = tune(method, tuning["grid"][method], evaluate, list(data), METRIC, "max")
    record["dataset"] = tuning["dataset"]
    record["budget"] = {"epochs": train["epochs"], "batch_size": train["batch_size"]}
    record["validation_fraction"] = fraction
    record["bags"] = {
        "fit": len(next(iter(data.values()))[0]),
        "validation": len(next(iter(data.values()))[1]),
    }
    return record


def tuned_params(
    model: Mapping[str, Any],
    train: Mapping[str, Any],
    selected: Mapping[str, Mapping[str, Any]],
    methods: Sequence[str],
) -> dict[str, tuple[dict[str, Any], dict[str, Any]]]:
    """{method: (model settings, train settings)} with each method's selected values
    (`selected`: core.tuning.selected of the records); a method without a record is an
    error."""
    missing = [m for m in methods if m not in selected]
    if missing:
        raise ValueError(f"ssg: no tuning record for method(s) {missing}")
    return {m: apply_values(model, train, selected[m]) for m in methods}
