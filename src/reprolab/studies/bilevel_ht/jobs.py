"""What one workflow job does: run every (noise, method) pair on one (dataset, topology, seed).

The job splits the dataset over the nodes (seeded by (seed, study, dataset, "data"), so both
topologies of a seed see the same split), builds the gossip matrix and runs all noise settings
and methods at once (optim.run_methods) with the oracle's minibatches and noise seeded by
(seed, study, dataset, "oracle"): every method and both topologies face the same noise path.
It writes `curves.h5` (the curves, [noise, method, checkpoint]) and `metrics.json` (final values
per noise and method). Communication: every iteration is one gossip round in which each node
sends its 3 blocks and 3 trackers (6 p-vectors) to each neighbour, the same for every method.
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
from reprolab.studies.bilevel_ht.data import node_split
from reprolab.studies.bilevel_ht.graphs import degree, gossip_matrix, spectral_gap
from reprolab.studies.bilevel_ht.optim import Method, Noise, run_methods

LOG = logging.getLogger(__name__)
STUDY = "bilevel_ht"
VECTORS_PER_ROUND = 6
CURVES = ("F", "gradnorm2", "accuracy", "consensus")


def noise_settings(params: dict[str, Any]) -> list[Noise]:
    """The params' noise settings, in params order."""
    return [
        Noise(kind=v["kind"], tail=float(v.get("tail", 0.0)), sigma=float(v["sigma"]))
        for v in params["noises"].values()
    ]


def check_params(params: dict[str, Any]) -> None:
    """Reject claims that name no method or noise of the section; ValueError naming the key.

    The rest (each method's estimator, direction, beta and step sizes, lo < 0 < hi of
    `optim.lambda_box`, types and ranges) is the schema's (studies/bilevel_ht.schema.yaml),
    checked by core.params.check_config before any job starts.
    """
    claims = params["claims"]
    for key in ("method", "ablation", "clipping", "unnormalised"):
        names = claims[key] if isinstance(claims[key], list) else [claims[key]]
        for name in names:
            if name not in params["methods"]:
                raise ValueError(f"bilevel_ht.claims.{key}: {name!r} is not in methods")
    for noise in [*claims["heavy_tailed"], claims["control"]]:
        if noise not in params["noises"]:
            raise ValueError(f"bilevel_ht.claims: noise {noise!r} is not in bilevel_ht.noises")


def run_job(
    params: dict[str, Any],
    dataset: str,
    topology: str,
    seed: int,
    out_dir: str | Path,
    threads: int = 1,
) -> dict[str, Any]:
    """Run one (dataset, topology, seed) job and write curves.h5 and metrics.json into out_dir.

    BLAS runs on `threads` threads (threadpoolctl), so the job uses the cores it was given.
    """
    check_params(params)
    with threadpool_limits(limits=threads):
        return _run_job(params, dataset, topology, seed, Path(out_dir))


def _run_job(
    params: dict[str, Any], dataset: str, topology: str, seed: int, folder: Path
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
    out = run_methods(
        data,
        w,
        [Method.from_params(params["methods"][m]) for m in methods],
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
