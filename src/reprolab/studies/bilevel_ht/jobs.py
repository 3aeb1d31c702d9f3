"""What one workflow job does: run every (noise, method) pair on one (dataset, topology, seed).

Every method runs at its tuned step sizes: its params entry's `eta_base` times the `eta_scale`
its tuning record selected (data/bilevel_ht/tuning/<method>.json, written on the tuning seeds
by the `bilevel_ht_tune_method` job, `tune.tune_method`). The job splits the dataset over the nodes
(seeded by (seed, study, dataset, "data"), so both topologies of a seed see the same split),
builds the gossip matrix and runs all noise settings and methods at once (optim.run_methods)
with the oracle's minibatches and noise seeded by (seed, study, dataset, "oracle"): every method
and both topologies face the same noise path. It writes `curves.h5` (the curves, [noise, method,
checkpoint]) and `metrics.json` (final values per noise and method, and each method's step
sizes with the tuning record they came from). Communication: every iteration is one gossip
round in which each node sends its 3 blocks and 3 trackers (6 p-vectors) to each neighbour, the
same for every method.
"""

from __future__ import annotations

import json
import logging
import time
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from reprolab.core.determinism import derive_seed
from reprolab.core.io import read_h5, write_h5, write_json
from reprolab.core.tuning import read_tuning
from reprolab.studies.bilevel_ht.data import node_split
from reprolab.studies.bilevel_ht.graphs import degree, gossip_matrix, spectral_gap
from reprolab.studies.bilevel_ht.optim import Method, Noise, run_methods

LOG = logging.getLogger(__name__)
STUDY = "bilevel_ht"
VECTORS_PER_ROUND = 6
CURVES = ("F", "gradnorm2", "accuracy", "consensus")


def noise_settings(params: dict[str, Any], names: list[str] | None = None) -> list[Noise]:
    """The params' noise settings (those in `names`, all by default), in params order."""
    return [
        Noise(kind=v["kind"], tail=float(v.get("tail", 0.0)), sigma=float(v["sigma"]))
        for name, v in params["noises"].items()
        if names is None or name in names
    ]


def check_params(params: dict[str, Any]) -> None:
    """Reject claims and tuning settings that name no method or noise of the section, and
    tuning grids of unequal sizes (every method gets the same number of grid points);
    ValueError naming the key.

    The rest (each method's estimator, direction, beta and step sizes, lo < 0 < hi of
    `optim.lambda_box`, types and ranges) is the schema's (studies/bilevel_ht.schema.yaml),
    checked by core.params.check_config before any job starts.
    """
    claims = params["claims"]
    for key in ("method", "ablation", "clipping", "unnormalised", "target_method"):
        names = claims[key] if isinstance(claims[key], list) else [claims[key]]
        for name in names:
            if name not in params["methods"]:
                raise ValueError(f"bilevel_ht.claims.{key}: {name!r} is not in methods")
    for noise in [*claims["heavy_tailed"], claims["control"]]:
        if noise not in params["noises"]:
            raise ValueError(f"bilevel_ht.claims: noise {noise!r} is not in bilevel_ht.noises")
    spec = params["tune"]
    if spec["topology"] not in params["topologies"]:
        raise ValueError(f"bilevel_ht.tune.topology: {spec['topology']!r} is not in topologies")
    for key, noises in [("noises", spec["noises"]), *spec["method_noises"].items()]:
        for noise in noises:
            if noise not in params["noises"]:
                raise ValueError(f"bilevel_ht.tune: noise {noise!r} ({key}) is not in noises")
    for key in ("method_noises", "grid"):
        for name in spec[key]:
            if name not in params["methods"]:
                raise ValueError(f"bilevel_ht.tune.{key}: {name!r} is not in methods")
    missing = [name for name in params["methods"] if name not in spec["grid"]]
    if missing:
        raise ValueError(f"bilevel_ht.tune.grid: no grid for method(s) {missing}")
    sizes = {name: len(grid["eta_scale"]) for name, grid in spec["grid"].items()}
    if len(set(sizes.values())) > 1:
        raise ValueError(f"bilevel_ht.tune.grid: every method needs as many points, got {sizes}")


def tuned_methods(
    params: dict[str, Any], tuning: list[str | Path]
) -> tuple[list[Method], dict[str, dict[str, Any]]]:
    """Every method of params at the values its tuning record selected, in params order, and
    per method what it ran with (step sizes, threshold, the selection and its tuning score):
    metrics.json's `hyperparameters`. A method without a record, a record of a method that is
    not in params and a record tuned on another grid or budget are errors."""
    records = {}
    for path in tuning:
        record = read_tuning(path)
        if record["method"] not in params["methods"] or record["method"] in records:
            raise ValueError(
                f"{path}: tuning record of {record['method']!r}: not a method of "
                "bilevel_ht.methods, or a second record of it"
            )
        grid = [float(v) for v in params["tune"]["grid"][record["method"]]["eta_scale"]]
        budget = record.get("setting", {}).get("iterations")
        if record["grid"] != {"eta_scale": grid} or budget != params["optim"]["iterations"]:
            raise ValueError(
                f"{path}: stale tuning record of {record['method']!r} (its grid or iteration "
                "budget is not the params' one): rerun its bilevel_ht_tune_method job"
            )
        records[record["method"]] = record
    missing = [name for name in params["methods"] if name not in records]
    if missing:
        raise ValueError(f"bilevel_ht: no tuning record for method(s) {missing}")
    methods, used = [], {}
    for name, values in params["methods"].items():
        record = records[name]
        method = Method.from_params(values, record["selected"]["eta_scale"])
        methods.append(method)
        used[name] = {
            "direction": method.direction,
            "eta": method.eta,
            "threshold": method.threshold,
            "beta": method.beta,
            "selected": record["selected"],
            "tuning_score": record["score"],
            "tuning_metric": record["metric"],
            "on_edge": record["on_edge"],
        }
    return methods, used


def run_job(
    params: dict[str, Any],
    tuning: list[str | Path],
    dataset: str,
    topology: str,
    seed: int,
    out_dir: str | Path,
    threads: int = 1,
) -> dict[str, Any]:
    """Run one (dataset, topology, seed) job at the values the `tuning` records selected (one
    record per method) and write curves.h5 and metrics.json into out_dir.

    BLAS runs on `threads` threads (threadpoolctl), so the job uses the cores it was given.
    """
    check_params(params)
    with threadpool_limits(limits=threads):
        return _run_job(params, list(tuning), dataset, topology, seed, Path(out_dir))


def _run_job(
    params: dict[str, Any],
    tuning: list[str | Path],
    dataset: str,
    topology: str,
    seed: int,
    folder: Path,
) -> dict[str, Any]:
    """run_job's body, inside the thread limit."""
    start = time.perf_counter()
    data = node_split(
        params["datasets"][dataset],
        params["nodes"],
        np.random.default_rng(derive_seed(seed, STUDY, dataset, "data")),
    )
    w = gossip_matrix(topology, params["nodes"])
    opt = params["optim"]
    methods = list(params["methods"])
    noises = list(params["noises"])
    tuned, hyperparameters = tuned_methods(params, tuning)
    out = run_methods(
        data,
        w,
        tuned,
        noise_settings(params),
        iterations=opt["iterations"],
        batch=opt["batch"],
        eval_every=opt["eval_every"],
        box=tuple(opt["lambda_box"]),
        bound=opt["divergence_bound"],
        rng=np.random.default_rng(derive_seed(seed, STUDY, dataset, "oracle")),
    )
    shape = (len(noises), len(methods))
    arrays = {key: out[key].reshape(*shape, -1) for key in CURVES}
    arrays |= {"iter": out["iter"], "diverged_at": out["diverged_at"].reshape(shape)}
    attrs = {
        "noises": json.dumps(noises),
        "methods": json.dumps(methods),
        "topology": topology,
        "degree": degree(topology, params["nodes"]),
        "vectors_per_round": VECTORS_PER_ROUND,
    }
    write_h5(folder / "curves.h5", arrays, attrs)
    metrics = {
        "dataset": dataset,
        "topology": topology,
        "seed": seed,
        "spectral_gap": spectral_gap(w),
        "degree": degree(topology, params["nodes"]),
        "hyperparameters": hyperparameters,
        "runs": {
            noise: {
                method: final_values(arrays, k, j, opt["iterations"])
                for j, method in enumerate(methods)
            }
            for k, noise in enumerate(noises)
        },
    }
    write_json(folder / "metrics.json", metrics)
    diverged = {
        f"{noise}/{method}": run["diverged_at"]
        for noise, runs in metrics["runs"].items()
        for method, run in runs.items()
        if run["diverged"]
    }
    LOG.info(
        "%s/%s/seed%d: %d runs x %d iterations in %.1f s; diverged at iteration: %s",
        dataset,
        topology,
        seed,
        len(noises) * len(methods),
        opt["iterations"],
        time.perf_counter() - start,
        diverged or "none",
    )
    return metrics


def final_values(arrays: dict[str, np.ndarray], k: int, j: int, iterations: int) -> dict[str, Any]:
    """Final F, stationarity, accuracy, consensus and divergence of run (noise k, method j)."""
    diverged_at = int(arrays["diverged_at"][k, j])
    values: dict[str, Any] = {key: float(arrays[key][k, j, -1]) for key in CURVES}
    values["F_init"] = float(arrays["F"][k, j, 0])
    values["diverged"] = diverged_at >= 0
    values["diverged_at"] = diverged_at if diverged_at >= 0 else None
    values["iterations"] = iterations
    return values


def read_curves(path: str | Path) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """A job's curves.h5: the arrays and the decoded attributes (noise and method names)."""
    import h5py

    with h5py.File(path, "r") as handle:
        attrs = {key: handle.attrs[key] for key in handle.attrs}
    for key in ("noises", "methods"):
        attrs[key] = json.loads(attrs[key])
    return read_h5(path), attrs
