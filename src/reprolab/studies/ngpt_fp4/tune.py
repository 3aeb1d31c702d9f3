"""The `ngpt_fp4_tune_arch` job: choose one architecture's learning rate on the tuning seeds.

Each architecture has a grid of peak learning rates (params `tune.grid.<arch>.lr`, the same
number of points for both); a point's score on a tuning seed is the final validation loss of a
full-precision run of the evaluation's length (jobs.tuning_score), so neither model is tuned
for FP4 and every NVFP4 recipe of a seed trains at its architecture's full-precision rate. The
lowest mean score over the tuning seeds wins (core.tuning.tune; a diverged run disqualifies its
point); the record says whether the winner sits on the grid's edge.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

from reprolab.core.determinism import derive_seed, seed_everything
from reprolab.core.tuning import outcome_line, tune, write_tuning
from reprolab.studies.ngpt_fp4.jobs import STUDY, Streams, tuning_score
from reprolab.studies.ngpt_fp4.workflow_io import check_architecture, check_params

LOG = logging.getLogger(__name__)


def tune_arch(
    params: dict[str, Any],
    arch: str,
    seeds: list[int],
    corpus_path: str | Path,
    out_path: str | Path,
    threads: int = 1,
) -> dict[str, Any]:
    """Tune `arch`'s learning rate on the tuning `seeds` and write its record to `out_path`."""
    check_params(params)
    check_architecture(arch)
    start = time.perf_counter()
    streams = Streams(corpus_path, params["corpus"]["val_share"])
    grid = {"lr": [float(lr) for lr in params["tune"]["grid"][arch]["lr"]]}

    def evaluate(values: dict[str, Any], seed: int) -> float:
        seed_everything(derive_seed(seed, STUDY, arch), threads)
        return tuning_score(params, arch, values["lr"], seed, streams)

    metric = f"final validation loss of the full-precision run ({params['train']['steps']} steps)"
    record = tune(arch, grid, evaluate, seeds, metric, "min")
    record["setting"] = {"recipe": "fp32", "steps": params["train"]["steps"]}
    write_tuning(out_path, record)
    LOG.info(outcome_line(record, time.perf_counter() - start))
    return record
