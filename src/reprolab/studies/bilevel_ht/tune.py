"""The `bilevel_ht_tune_method` job: choose one method's step size on the tuning seeds.

Every method has a base step per block (params `methods.<m>.eta_base`) and a grid of
multipliers (`tune.grid.<m>.eta_scale`, the same number of points for every method). A grid
point is scored per tuning seed (params `tuning_seeds`, disjoint from the evaluation seeds) by
running the method for the evaluation's budget (`optim.iterations`) on the tuning topology
(`tune.topology`) under every tuning noise (`tune.noises`, or `tune.method_noises.<m>` for a
method tuned on some noises only: `dsgd_gtuned` on the Gaussian control) and every dataset, on
that seed's node split and noise path: the score is the mean final upper-level loss F over
those runs, NaN when any of them diverged, so a step that diverges once is never selected
(core.tuning.tune). The lowest mean score over the tuning seeds wins. All grid points of a seed
run in one vectorised call and share the minibatches and noise draws, as the methods of an
evaluation job do, so every method of the study is tuned on the same noise path (the clipping
thresholds' tuning scores are therefore comparable: the claims' "best clipping threshold" is
the one with the lowest score).

The record (core.tuning.write_tuning) keeps every trial, the winner, whether it sits on the
grid's edge, the setting tuned on, and per trial, seed, dataset and noise the final F (None:
diverged) and the iteration at which a run diverged.
"""

from __future__ import annotations

import logging
import time
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from reprolab.core.determinism import derive_seed
from reprolab.core.tuning import grid_points, outcome_line, tune, write_tuning
from reprolab.studies.bilevel_ht.data import node_split
from reprolab.studies.bilevel_ht.graphs import gossip_matrix
from reprolab.studies.bilevel_ht.jobs import STUDY, check_params, noise_settings
from reprolab.studies.bilevel_ht.optim import Method, run_methods

LOG = logging.getLogger(__name__)


def tuning_noises(params: dict[str, Any], method: str) -> list[str]:
    """The noise settings `method` is tuned on, in params order."""
    spec = params["tune"]
    names = spec["method_noises"].get(method, spec["noises"])
    return [name for name in params["noises"] if name in names]


def metric_name(params: dict[str, Any], method: str) -> str:
    """The tuning metric of `method`, in words."""
    return (
        f"mean final F ({params['tune']['topology']}; noise "
        f"{', '.join(tuning_noises(params, method))}; {params['optim']['iterations']} "
        "iterations; any divergence disqualifies)"
    )


def grid_runs(
    params: dict[str, Any], method: str, points: list[dict[str, Any]], seed: int
) -> dict[str, Any]:
    """Run every grid point of `method` on tuning seed `seed`: per dataset and tuning noise the
    final F of each point ([dataset][noise] -> list over points, NaN where it diverged) and the
    iteration at which it diverged (−1: never)."""
    opt, topology = params["optim"], params["tune"]["topology"]
    noises = tuning_noises(params, method)
    settings = noise_settings(params, noises)
    methods = [Method.from_params(params["methods"][method], p["eta_scale"]) for p in points]
    final: dict[str, dict[str, list[float]]] = {}
    diverged_at: dict[str, dict[str, list[int]]] = {}
    for dataset, spec in params["datasets"].items():
        data = node_split(
            spec,
            params["nodes"],
            np.random.default_rng(derive_seed(seed, STUDY, dataset, "data")),
        )
        out = run_methods(
            data,
            gossip_matrix(topology, params["nodes"]),
            methods,
            settings,
            iterations=opt["iterations"],
            batch=opt["batch"],
            eval_every=opt["iterations"],  # only the final F is scored
            box=tuple(opt["lambda_box"]),
            bound=opt["divergence_bound"],
            rng=np.random.default_rng(derive_seed(seed, STUDY, dataset, "oracle")),
        )
        f_final = out["F"][:, -1].reshape(len(noises), len(points))
        at = out["diverged_at"].reshape(len(noises), len(points))
        final[dataset] = {n: f_final[k].tolist() for k, n in enumerate(noises)}
        diverged_at[dataset] = {n: at[k].tolist() for k, n in enumerate(noises)}
    return {"final_F": final, "diverged_at": diverged_at}


def tune_method(
    params: dict[str, Any],
    method: str,
    seeds: list[int],
    out_path: str | Path,
    threads: int = 1,
) -> dict[str, Any]:
    """Tune `method`'s step-size multiplier on the tuning `seeds` and write its record."""
    check_params(params)
    if method not in params["methods"]:
        raise ValueError(f"bilevel_ht_tune_method: {method!r} is not in bilevel_ht.methods")
    grid = {"eta_scale": [float(v) for v in params["tune"]["grid"][method]["eta_scale"]]}
    points = grid_points(grid)
    start = time.perf_counter()
    runs: dict[int, dict[str, Any]] = {}

    def evaluate(values: dict[str, Any], seed: int) -> float:
        if seed not in runs:  # every grid point of a seed at once
            runs[seed] = grid_runs(params, method, points, seed)
        j = points.index(values)
        finals = [f[j] for by_noise in runs[seed]["final_F"].values() for f in by_noise.values()]
        return float(np.mean(finals))  # NaN when any run diverged

    with threadpool_limits(limits=threads):
        record = tune(method, grid, evaluate, seeds, metric_name(params, method), "min")
    record["setting"] = {
        "topology": params["tune"]["topology"],
        "noises": tuning_noises(params, method),
        "datasets": list(params["datasets"]),
        "iterations": params["optim"]["iterations"],
        "eta_base": dict(params["methods"][method]["eta_base"]),
    }
    record["runs"] = [
        {
            "values": point,
            "seed": seed,
            "final_F": {
                dataset: {
                    noise: (None if not np.isfinite(f[j]) else float(f[j]))
                    for noise, f in by_noise.items()
                }
                for dataset, by_noise in runs[seed]["final_F"].items()
            },
            "diverged_at": {
                dataset: {noise: int(at[j]) for noise, at in by_noise.items()}
                for dataset, by_noise in runs[seed]["diverged_at"].items()
            },
        }
        for j, point in enumerate(points)
        for seed in seeds
    ]
    write_tuning(out_path, record)
    LOG.info(outcome_line(record, time.perf_counter() - start))
    return record
