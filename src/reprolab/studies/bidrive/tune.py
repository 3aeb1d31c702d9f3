"""bidrive's tuning: each trained planner's learning rate on the tuning seeds.

Every trained model (teacher, student, flow matching, MLP) gets a grid of peak learning rates
(params `tune.grid.<model>`, the same number of points each), trained at the evaluation budget
on the training scenes of each tuning seed and scored by the mean PDMS of its row on that seed's
validation scenes (the quantity the table compares): the teacher and the student by ML
selection among their samples, flow matching by its heuristic selection, the MLP by its plan.
Higher is better; a grid point whose training diverged scores NaN and is never selected. The
distilled student trains at the student's selected rate.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import numpy as np

from reprolab.core.determinism import derive_seed, resolve_device, seed_everything
from reprolab.core.tuning import outcome_line, tune, write_tuning
from reprolab.models.training import score_unless_diverged
from reprolab.studies.bidrive.jobs import (
    STUDY,
    TrainingSet,
    plan_scenes,
    scene_set,
    train_model,
)
from reprolab.studies.bidrive.pdms import score_scenes
from reprolab.studies.bidrive.scenes import Scenes
from reprolab.studies.bidrive.workflow_io import check_model, check_params

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


def tuning_score(
    params: dict[str, Any], model: str, lr: float, seed: int, scenes: TuningScenes
) -> float:
    """Mean validation PDMS of `model`'s row after training at `lr` on `seed`'s scenes."""
    data, validation = scenes.of(seed)
    trained, _ = train_model(params, model, data, lr, seed, scenes.device)
    planned = plan_scenes(params, {model: trained}, validation, seed, [model])
    return float(np.mean(score_scenes(planned.selected[model], validation).score))


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
