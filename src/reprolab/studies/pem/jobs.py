"""What one workflow job does: every method on every source setting at one noise level, one seed.

A job is (noise level, seed): for each entry of `sources` it draws the problem (sources,
mixing, noise) from derive_seed(seed, "pem", source, snr), runs every method on the same
observations (paired design; each method's own randomness from (…, method)), and writes
`<runs>/snr<db>/seed<k>/metrics.json`: per source and method the SINR (dB), and for PEM and
PEM-batch the surrogate-error diagnostics of `metrics.surrogate_bound`; for online PEM also
the per-epoch SINR and bound curves. Wall times go to the job's log only (metrics.json must be
byte-identical across runs).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import numpy as np
from threadpoolctl import threadpool_limits

from reprolab.core.determinism import derive_seed
from reprolab.core.io import write_json
from reprolab.studies.pem import baselines
from reprolab.studies.pem.batch import BatchConfig, train_batch
from reprolab.studies.pem.domains import projection
from reprolab.studies.pem.metrics import sinr_db, surrogate_bound
from reprolab.studies.pem.pem import Network, OnlineConfig, outputs, train_online
from reprolab.studies.pem.sources import Problem, make_problem

STUDY = "pem"
METHODS = ("pem", "pem_batch", "detmax", "corinfomax", "nsm", "fastica")


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
        spec = params[method]
        config = BatchConfig(**{**spec, "betas": tuple(spec["betas"])})
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
        Y = baselines.fastica(X, n, seed, int(params["fastica"]["max_iter"]))
        return {"sinr": sinr_db(problem.sources, Y)}
    raise ValueError(f"pem: unknown method {method!r}; known: {', '.join(METHODS)}")


def run_job(
    snr_db: float, seed: int, params: dict[str, Any], threads: int, out_dir: str | Path
) -> dict:
    """All sources × methods at one noise level for one seed; writes and returns metrics.json.

    BLAS runs on `threads` threads (numpy's default would use every core, which oversubscribes
    the machine when the workflow runs jobs side by side).
    """
    with threadpool_limits(limits=threads):
        out = _run_all(snr_db, seed, params)
    write_json(Path(out_dir) / "metrics.json", out)
    return out


def _run_all(snr_db: float, seed: int, params: dict[str, Any]) -> dict:
    data = params["data"]
    results: dict[str, Any] = {}
    for name, source in params["sources"].items():
        domain = source["domain"]
        condition = {**source, "snr_db": snr_db}
        problem_rng = np.random.default_rng(derive_seed(seed, STUDY, name, snr_db))
        problem = make_problem(
            condition, data["n_samples"], data["n_sources"], data["n_mixtures"], problem_rng
        )
        results[name] = {}
        for method in params["methods"]:
            rng = np.random.default_rng(derive_seed(seed, STUDY, name, snr_db, method))
            start = time.perf_counter()
            results[name][method] = run_method(method, problem, domain, params, rng)
            wall = time.perf_counter() - start
            sinr = results[name][method]["sinr"]
            print(f"{name} snr {snr_db:g} seed {seed} {method}: {sinr:.2f} dB, {wall:.2f} s")
    return {"study": STUDY, "seed": seed, "snr_db": snr_db, "sources": results}
