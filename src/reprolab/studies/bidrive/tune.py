"""bidrive's tuning: each trained planner's learning rate, and the distillation's, on the tuning
seeds.

Every trained model (teacher, student, flow matching, MLP) gets a grid of peak learning rates
(params `tune.grid.<model>`, the same number of points each), trained at the evaluation budget
on the training scenes of each tuning seed and scored by the mean PDMS of its row on that seed's
validation scenes (the quantity the table compares): the teacher and the student by ML
selection among their samples, flow matching by its heuristic selection, the MLP by its plan.
Higher is better; a grid point whose training diverged scores NaN and is never selected.

The distillation's learning rate (params `tune.grid.distilled`) is tuned the same way once the
teacher's and the student's records exist: on each tuning seed the teacher and the MLE student
are trained once at their selected rates, the student is distilled from the teacher at each grid
rate, and the distilled student's ML selection is scored by validation PDMS (a job per tuning
seed, `distillation_scores`, so that the seeds run side by side; `tune_distillation` selects
from their scores as `core.tuning.tune` does). Distillation fine-tunes a trained student, so its
best rate need not be the student's (at the student's rate the reverse-KL term can wreck it:
docs/studies/bidrive.md).
"""

from __future__ import annotations

import logging
import math
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch

from reprolab.core.determinism import derive_seed, resolve_device, seed_everything
from reprolab.core.io import read_json, write_json
from reprolab.core.tuning import outcome_line, selected, tune, write_tuning
from reprolab.models.training import Diverged, score_unless_diverged
from reprolab.studies.bidrive.jobs import (
    STUDY,
    TrainingSet,
    distil,
    plan_scenes,
    scene_set,
    train_model,
)
from reprolab.studies.bidrive.pdms import score_scenes
from reprolab.studies.bidrive.scenes import Scenes
from reprolab.studies.bidrive.workflow_io import DISTILLED, check_model, check_params

LOG = logging.getLogger(__name__)


class TuningScenes:
    """Each tuning seed's training and validation scenes, generated once and shared by the grid
    points (the scenes of a seed do not depend on the grid point)."""

    def __init__(self, params: dict[str, Any]) -> None:
        self.params = params
        self.device = resolve_device(str(params["device"]))
        self.by_seed: dict[int, tuple[TrainingSet, Scenes]] = {}

    def of(self, seed: int) -> tuple[TrainingSet, Scenes]:
        """(training set, validation scenes) of `seed`."""
        if seed not in self.by_seed:
            train = TrainingSet(scene_set(self.params, seed, "train"), self.device)
            self.by_seed[seed] = (train, scene_set(self.params, seed, "validation"))
        return self.by_seed[seed]


def validation_pdms(
    params: dict[str, Any], row: str, model: torch.nn.Module, seed: int, validation: Scenes
) -> float:
    """Mean PDMS of `row`'s plans (`model` planning it) on the validation scenes. A model whose
    loss stayed finite but whose plans do not (a flow trained at too high a rate can decode a
    latent to inf) has diverged too: Diverged, so that its grid point scores NaN."""
    planned = plan_scenes(params, {row: model}, validation, seed, [row])
    plans = planned.selected[row]
    if not np.all(np.isfinite(plans)):
        bad = int(np.sum(~np.isfinite(plans).all(axis=(1, 2))))
        raise Diverged(f"{row}: {bad} of {len(plans)} validation plans are not finite")
    return float(np.mean(score_scenes(plans, validation).score))


def tuning_score(
    params: dict[str, Any], model: str, lr: float, seed: int, scenes: TuningScenes
) -> float:
    """Mean validation PDMS of `model`'s row after training at `lr` on `seed`'s scenes."""
    data, validation = scenes.of(seed)
    trained, _ = train_model(params, model, data, lr, seed, scenes.device)
    return validation_pdms(params, model, trained, seed, validation)


def tune_model(
    params: dict[str, Any],
    model: str,
    seeds: list[int],
    out_path: str | Path,
    threads: int = 1,
) -> dict[str, Any]:
    """Tune `model`'s learning rate on the tuning `seeds` and write its record."""
    check_params(params)
    check_model(model)
    grid = {"lr": [float(v) for v in params["tune"]["grid"][model]["lr"]]}
    start = time.perf_counter()
    scenes = TuningScenes(params)

    def evaluate(values: dict[str, Any], seed: int) -> float:
        seed_everything(derive_seed(seed, STUDY, "tune", model), threads)
        lr = float(values["lr"])
        return score_unless_diverged(lambda: tuning_score(params, model, lr, seed, scenes), LOG)

    record = tune(model, grid, evaluate, seeds, "validation PDMS of the model's row", "max")
    record["setting"] = {"train": dict(params["train"]), "scenes": dict(params["scenes"])}
    write_tuning(out_path, record)
    LOG.info(outcome_line(record, time.perf_counter() - start))
    return record


def distillation_scores(
    params: dict[str, Any],
    seed: int,
    tuning_files: list[str],
    out_path: str | Path,
    threads: int = 1,
) -> dict[str, Any]:
    """One tuning seed's share of the distillation's tuning (module docstring): the teacher and
    the student trained at the rates of their records `tuning_files`, distilled at every rate of
    `tune.grid.distilled`; writes {"seed", "lr": rates, "scores": validation PDMS per rate (None
    where the distillation diverged)}. A job per tuning seed, so that the seeds run side by
    side."""
    check_params(params)
    tuned = selected(tuning_files)
    rates = [float(v) for v in params["tune"]["grid"][DISTILLED]["lr"]]
    data, validation = TuningScenes(params).of(seed)
    seed_everything(derive_seed(seed, STUDY, "tune", DISTILLED, "pair"), threads)
    device = resolve_device(str(params["device"]))
    teacher, student = (
        train_model(params, m, data, float(tuned[m]["lr"]), seed, device)[0]
        for m in ("teacher", "student")
    )

    def score(lr: float) -> float:
        seed_everything(derive_seed(seed, STUDY, "tune", DISTILLED), threads)
        distilled, _ = distil(params, teacher, student, data, lr, seed)
        return validation_pdms(params, DISTILLED, distilled, seed, validation)

    scores = [score_unless_diverged(lambda lr=lr: score(lr), LOG) for lr in rates]
    out = {
        "seed": int(seed),
        "lr": rates,
        "scores": [value if math.isfinite(value) else None for value in scores],
        "teacher_lr": float(tuned["teacher"]["lr"]),
        "student_lr": float(tuned["student"]["lr"]),
    }
    write_json(out_path, out)
    return out


def tune_distillation(
    params: dict[str, Any], seed_files: list[str], out_path: str | Path
) -> dict[str, Any]:
    """The distillation's tuning record from the per-seed scores `seed_files`
    (`distillation_scores`), selected as every other rate is (`core.tuning.tune`)."""
    check_params(params)
    start = time.perf_counter()
    rates = [float(v) for v in params["tune"]["grid"][DISTILLED]["lr"]]
    parts = [read_json(path) for path in seed_files]
    by_seed = {}
    for path, part in zip(seed_files, parts, strict=True):
        if part["lr"] != rates:
            raise ValueError(
                f"{path}: scores for the rates {part['lr']}, but bidrive.tune.grid.distilled.lr "
                f"is {rates} (rerun bidrive_tune_distillation_seed)"
            )
        by_seed[int(part["seed"])] = dict(zip(rates, part["scores"], strict=True))

    def evaluate(values: dict[str, Any], seed: int) -> float:
        value = by_seed[seed][float(values["lr"])]
        return math.nan if value is None else float(value)

    metric = "validation PDMS of the distilled student's ML selection"
    record = tune(DISTILLED, {"lr": rates}, evaluate, sorted(by_seed), metric, "max")
    record["setting"] = {
        "distillation": dict(params["distillation"]),
        "teacher_lr": parts[0]["teacher_lr"],
        "student_lr": parts[0]["student_lr"],
    }
    write_tuning(out_path, record)
    LOG.info(outcome_line(record, time.perf_counter() - start))
    return record
