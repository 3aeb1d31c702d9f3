"""The `pem_tune` job: choose one method's hyperparameters on the tuning seeds.

One job per method. Every point of the method's grid (`tune.grid.<method>`, values of keys of
its params section; the budget keys of `jobs.BUDGET_KEYS` are never axes) is run on every
source setting of the sweep at one sensor SNR (`tune.snr_db`) for every tuning seed
(`tuning_seeds`, disjoint from the table's seeds), with the table's data size and passes. A
trial's score on a seed is the mean SINR (dB) over the source settings; `core.tuning.tune`
selects the grid point with the best mean over the tuning seeds and writes the record the run
jobs read. A trial that diverges (a linear-algebra failure or non-finite outputs on any source)
scores NaN and is never selected.

A tuning problem is drawn exactly as a table problem (`jobs.draw_problem`), from the tuning
seed instead of an evaluation seed. PEM-batch's β is online PEM's
(`workflow_io.TUNE_DEPENDS`): its job applies PEM's selected values first.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from reprolab.core.tuning import selected, tune, write_tuning
from reprolab.studies.pem.jobs import apply_selected, draw_problem, method_rng, run_method
from reprolab.studies.pem.workflow_io import TUNE_DEPENDS


def metric(params: Mapping[str, Any]) -> str:
    """The name of the tuning score."""
    return f"mean SINR (dB) over the source settings at {float(params['tune']['snr_db']):g} dB"


def evaluate(method: str, values: Mapping[str, Any], seed: int, params: Mapping[str, Any]) -> float:
    """Mean SINR (dB) of `method` with `values` over every source setting at `tune.snr_db`,
    on tuning seed `seed`; NaN when the method diverges on any of them."""
    trial = apply_selected(params, {method: dict(values)})
    snr = float(params["tune"]["snr_db"])
    scores = []
    for name, source in params["sources"].items():
        problem = draw_problem(seed, name, source, snr, params["data"])
        rng = method_rng(seed, name, snr, method)
        try:
            with np.errstate(all="ignore"):
                sinr = run_method(method, problem, source["domain"], trial, rng)["sinr"]
        except np.linalg.LinAlgError:
            sinr = math.nan
        print(f"tune {method} {dict(values)} seed {seed} {name}: {sinr:.2f} dB")
        if not math.isfinite(sinr):
            return math.nan
        scores.append(sinr)
    return float(np.mean(scores))


def tune_method(
    params: Mapping[str, Any],
    method: str,
    seeds: Sequence[int],
    out_path: str | Path,
    upstream: Sequence[str | Path] = (),
    threads: int = 1,
) -> dict[str, Any]:
    """Tune `method` on `seeds` over `tune.grid.<method>` and write its record to `out_path`.

    `upstream` are the records of the methods it depends on (`workflow_io.TUNE_DEPENDS`), whose
    selected values are applied first. BLAS runs on `threads` threads.
    """
    chosen = selected(upstream)
    needed = sorted(TUNE_DEPENDS.get(method, ()))
    if sorted(chosen) != needed:
        raise ValueError(
            f"pem tuning of {method}: needs the tuning records of {needed}, got {sorted(chosen)}"
        )
    base = apply_selected(params, chosen)
    grid = params["tune"]["grid"][method]
    with threadpool_limits(limits=threads):
        record = tune(
            method,
            grid,
            lambda values, seed: evaluate(method, values, seed, base),
            seeds,
            metric(params),
            "max",
        )
    if chosen:
        record["upstream"] = chosen
    write_tuning(out_path, record)
    return record
