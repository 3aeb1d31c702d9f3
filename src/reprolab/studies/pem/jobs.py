"""What one workflow job does: every method on every source setting at one noise level, one seed.

A job is (noise level, seed): for each entry of `sources` it draws the problem (sources,
mixing, noise) from derive_seed(seed, "pem", source, snr), runs every method on the same
observations (paired design; each method's own randomness from (…, method)), and writes
`<runs>/snr<db>/seed<k>/metrics.json`: per source and method the SINR (dB), and for PEM and
PEM-batch the surrogate-error diagnostics of `metrics.surrogate_bound`; for online PEM also
the per-epoch SINR and bound curves; and the tuned values it applied. Wall times go to the
job's log only (metrics.json must be byte-identical across runs).

Every method's hyperparameters named in `tune.grid` come from its tuning record
(`data/pem/tuning/<method>.json`, written by the `pem_tune` rule on the tuning seeds,
`reprolab.studies.pem.tune`): `tuned_params` applies them, and a job without a record for a
listed method stops. `workflow_io.check_params` (the rule file calls it) keeps what the schema
cannot say about the grids. PEM-batch solves online PEM's objective: its β is PEM's
(`batch_config`).
"""

from __future__ import annotations

import copy
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from reprolab.core.determinism import derive_seed
from reprolab.core.io import write_json
from reprolab.core.tuning import selected
from reprolab.studies.pem import baselines
from reprolab.studies.pem.batch import BatchConfig, train_batch
from reprolab.studies.pem.domains import projection
from reprolab.studies.pem.metrics import sinr_db, surrogate_bound
from reprolab.studies.pem.pem import Network, OnlineConfig, outputs, train_online
from reprolab.studies.pem.sources import Problem, make_problem
from reprolab.studies.pem.workflow_io import config_fields

STUDY = "pem"
METHODS = ("pem", "pem_batch", "detmax", "corinfomax", "nsm", "fastica")
BUDGET_KEYS = ("epochs", "batch_size", "iterations", "inner_iterations", "max_iter")
"""Keys that set a method's compute and sample budget: the same at every grid point, never a
tuning axis (the schema lists the tunable keys of each method)."""


def apply_selected(params: Mapping[str, Any], chosen: Mapping[str, Mapping[str, Any]]) -> dict:
    """A copy of the study's params with each method's section updated by its tuned values."""
    out = copy.deepcopy(dict(params))
    for method, values in chosen.items():
        unknown = sorted(set(values) - set(config_fields(method)))
        if unknown:
            raise ValueError(f"pem: tuned value(s) {unknown} are not settings of {method}")
        out[method].update(values)
    return out


def tuned_params(
    params: Mapping[str, Any], tuning_files: Sequence[str | Path]
) -> tuple[dict[str, Any], dict[str, dict[str, Any]]]:
    """(params with every listed method's tuned values applied, those values per method)."""
    chosen = selected(tuning_files)
    missing = [m for m in params["methods"] if m not in chosen]
    if missing:
        raise ValueError(f"pem: no tuning record for method(s) {missing} (rule pem_tune)")
    chosen = {m: chosen[m] for m in params["methods"]}
    return apply_selected(params, chosen), chosen


def batch_config(method: str, params: Mapping[str, Any]) -> BatchConfig:
    """The batch solver's config: PEM-batch at online PEM's β, det-max through its stages."""
    spec = dict(params[method])
    if method == "pem_batch":
        return BatchConfig(betas=(float(params["pem"]["beta"]),), **spec)
    return BatchConfig(**{**spec, "betas": tuple(spec["betas"])})


def draw_problem(
    seed: int, name: str, source: Mapping[str, Any], snr_db: float, data: Mapping[str, Any]
) -> Problem:
    """The problem of source setting `name` at `snr_db` for `seed` (tuning or evaluation)."""
    rng = np.random.default_rng(derive_seed(seed, STUDY, name, snr_db))
    condition = {**source, "snr_db": snr_db}
    return make_problem(condition, data["n_samples"], data["n_sources"], data["n_mixtures"], rng)


def method_rng(seed: int, name: str, snr_db: float, method: str) -> np.random.Generator:
    """A method's own randomness on one problem (initial weights, sample order)."""
    return np.random.default_rng(derive_seed(seed, STUDY, name, snr_db, method))


def _bound(net: Network, X: np.ndarray, domain: str, beta: float) -> dict[str, float]:
    pred = X @ net.W.T + net.b
    return surrogate_bound(projection(domain)(pred) - pred, beta)


def run_method(
    method: str, problem: Problem, domain: str, params: dict[str, Any], rng: np.random.Generator
) -> dict[str, Any]:
    """One method on one problem: its SINR and (PEM variants) surrogate diagnostics."""
    X, n = problem.observations, problem.sources.shape[1]
    if method == "pem":
        config = OnlineConfig(**params["pem"])
        curves: dict[str, list[float]] = {"sinr": [], "delta": [], "upper": [], "lower": []}

        def record(epoch: int, net: Network) -> None:
            curves["sinr"].append(sinr_db(problem.sources, outputs(net, X, domain)))
            for key, value in _bound(net, X, domain, config.beta).items():
                if key in curves:
                    curves[key].append(value)

        net = train_online(X, n, domain, config, rng, on_epoch=record)
        out = {"bound": _bound(net, X, domain, config.beta), "curves": curves}
        return {"sinr": curves["sinr"][-1], **out}
    if method in ("pem_batch", "detmax"):
        config = batch_config(method, params)
        net = train_batch(X, n, domain, config, rng)
        sinr = sinr_db(problem.sources, outputs(net, X, domain))
        return {"sinr": sinr, "bound": _bound(net, X, domain, config.betas[-1])}
    if method == "corinfomax":
        config = baselines.CorInfoMaxConfig(**params["corinfomax"])
        return {"sinr": sinr_db(problem.sources, baselines.corinfomax(X, n, domain, config, rng))}
    if method == "nsm":
        config = baselines.NSMConfig(**params["nsm"])
        return {"sinr": sinr_db(problem.sources, baselines.nsm(X, n, config, rng))}
    if method == "fastica":
        seed = int(rng.integers(2**31 - 1))
        Y = baselines.fastica(X, n, seed, baselines.FastICAConfig(**params["fastica"]))
        return {"sinr": sinr_db(problem.sources, Y)}
    raise ValueError(f"pem: unknown method {method!r}; known: {', '.join(METHODS)}")


def run_job(
    snr_db: float,
    seed: int,
    params: dict[str, Any],
    threads: int,
    out_dir: str | Path,
    tuning_files: Sequence[str | Path],
) -> dict:
    """All sources × methods at one noise level for one seed, with the tuned values of
    `tuning_files` (one record per listed method); writes and returns metrics.json.

    BLAS runs on `threads` threads (numpy's default would use every core, which oversubscribes
    the machine when the workflow runs jobs side by side).
    """
    params, chosen = tuned_params(params, tuning_files)
    with threadpool_limits(limits=threads):
        out = _run_all(snr_db, seed, params)
    out["tuned"] = chosen
    write_json(Path(out_dir) / "metrics.json", out)
    return out


def _run_all(snr_db: float, seed: int, params: dict[str, Any]) -> dict:
    results: dict[str, Any] = {}
    for name, source in params["sources"].items():
        domain = source["domain"]
        problem = draw_problem(seed, name, source, snr_db, params["data"])
        results[name] = {}
        for method in params["methods"]:
            rng = method_rng(seed, name, snr_db, method)
            start = time.perf_counter()
            results[name][method] = run_method(method, problem, domain, params, rng)
            wall = time.perf_counter() - start
            sinr = results[name][method]["sinr"]
            print(f"{name} snr {snr_db:g} seed {seed} {method}: {sinr:.2f} dB, {wall:.2f} s")
    return {"study": STUDY, "seed": seed, "snr_db": snr_db, "sources": results}
