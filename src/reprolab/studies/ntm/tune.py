"""ntm's tuning: each trained method's learning rate on the tuning seeds.

Every method (flow matching, consistency distillation, Gauss-K, NTM-K) gets a grid of peak
learning rates (params `tune.grid.<method>`, the same number of points each), trained at the
evaluation budget on the tuning dataset (params `tune.dataset`) of each tuning seed and scored by
the sliced Wasserstein distance of its K-step samples to that seed's test set: the quantity the
table compares, for the output the claims compare (FM by its K-step Euler samples, NTM by its
rescaled x_{t_0}). Consistency distillation distils the flow-matching teacher trained at the
rate flow matching's record selected, so its job reads that record. Lower is better; a grid
point whose training diverged (non-finite loss) scores NaN and is never selected.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from reprolab.core.determinism import derive_seed, seed_everything
from reprolab.core.tuning import outcome_line, selected, tune, write_tuning
from reprolab.models.training import score_unless_diverged
from reprolab.studies.ntm.jobs import (
    STUDY,
    RunContext,
    few_step_samples,
    sample_quality,
    train_cd,
    train_fm,
    train_trajectory,
)
from reprolab.studies.ntm.workflow_io import check_method, check_params

LOG = logging.getLogger(__name__)


def tuning_score(
    params: dict[str, Any], method: str, lr: float, seed: int, teacher_lr: float | None
) -> float:
    """SWD of `method`'s K-step samples after training at `lr` on the tuning dataset of `seed`
    (the teacher of "cd" trained at `teacher_lr`)."""
    run = RunContext(params, params["tune"]["dataset"], seed)
    if method == "fm":
        model, _ = train_fm(run, lr)
    elif method == "cd":
        teacher, _ = train_fm(run, float(teacher_lr))
        model, _ = train_cd(run, teacher, lr)
    else:
        model, _ = train_trajectory(run, method, lr)
    return float(sample_quality(run, few_step_samples(run, method, model))["swd"])


def tune_method(
    params: dict[str, Any],
    method: str,
    seeds: list[int],
    out_path: str | Path,
    threads: int = 1,
    teacher_files: list[str] = (),
) -> dict[str, Any]:
    """Tune `method`'s learning rate on the tuning `seeds` and write its record; "cd" needs the
    flow-matching record among `teacher_files`."""
    check_params(params)
    check_method(method)
    teacher_lr = float(selected(teacher_files)["fm"]["lr"]) if method == "cd" else None
    grid = {"lr": [float(v) for v in params["tune"]["grid"][method]["lr"]]}
    start = time.perf_counter()

    def evaluate(values: dict[str, Any], seed: int) -> float:
        seed_everything(derive_seed(seed, STUDY, "tune", method), threads)
        lr = float(values["lr"])
        return score_unless_diverged(
            lambda: tuning_score(params, method, lr, seed, teacher_lr), LOG
        )

    record = tune(method, grid, evaluate, seeds, "sliced Wasserstein (K-step samples)", "min")
    record["setting"] = {
        "dataset": params["tune"]["dataset"],
        "budget": dict(params["budget"]),
        **({"teacher_lr": teacher_lr} if teacher_lr is not None else {}),
    }
    write_tuning(out_path, record)
    LOG.info(outcome_line(record, time.perf_counter() - start))
    return record
