"""What one rule job of the icl_manifold study does.

* `tune_setting` (one job per setting): picks the classical estimators' hyperparameters on
  prompts of the tuning seed only (never an evaluation seed) — the oracle's bandwidth constant
  h₀ (one value per setting, best summed log MSE over the n grid, since its rate in n is the
  theory's), and kNN's k, Nadaraya–Watson's and ambient local-linear's bandwidths per n (the
  usual tuned-per-sample-size baselines). Writes a JSON file.
* `evaluate_seed` (one job per seed): trains the two-stage network and the generic linear
  transformer on a training pool of the seed (the exact-solve ablation is the trained
  two-stage network with a closed-form solver), then evaluates every method on fresh
  evaluation prompts of the seed for every setting and n. Writes `errors.h5`: per setting a
  dataset (methods, len(sizes), prompts) of squared errors against the noiseless target
  (mean over the prompt's queries), and `training.json`.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from reprolab.core.determinism import derive_seed, seed_everything
from reprolab.core.io import read_json, write_h5, write_json
from reprolab.core.progress import progress
from reprolab.studies.icl_manifold import estimators
from reprolab.studies.icl_manifold.manifolds import Prompts, make_prompts
from reprolab.studies.icl_manifold.models import LinearTransformer, TwoStage
from reprolab.studies.icl_manifold.spec import STUDY, setting_spec
from reprolab.studies.icl_manifold.train import make_pool, predict, train_model

METHODS = ("oracle_lp", "twostage_tf", "twostage_exact", "lintf", "knn", "nw", "ambient_ll")
PREDICT_CHUNK = 50


def check_methods(methods: list[str]) -> None:
    """Reject method names the study does not implement."""
    unknown = [m for m in methods if m not in METHODS]
    if unknown:
        raise ValueError(f"icl_manifold.methods: unknown {unknown}; known {list(METHODS)}")


def classical(params: dict[str, Any]) -> dict[str, Callable[[Prompts, float], np.ndarray]]:
    """The classical estimators as functions of (prompts, hyperparameter)."""
    oracle, alpha = params["oracle"], params["data"]["alpha"]
    return {
        "oracle_lp": lambda p, h0: estimators.oracle_lp(
            p, h0, alpha, oracle["h_max"], oracle["min_points"], oracle["min_ratio"]
        ),
        "knn": lambda p, k: estimators.knn(p, int(k)),
        "nw": estimators.nadaraya_watson,
        "ambient_ll": estimators.ambient_local_linear,
    }


GRIDS = {"oracle_lp": "oracle_h0", "knn": "knn_k", "nw": "nw_h", "ambient_ll": "ll_h"}


def squared_errors(prompts: Prompts, prediction: np.ndarray) -> np.ndarray:
    """Per-prompt squared error against the noiseless target, mean over queries: (P,)."""
    return np.mean((prediction - prompts.f[:, prompts.n :]) ** 2, axis=1)


def tune_setting(params: dict[str, Any], setting: str, out_path: str | Path) -> dict[str, Any]:
    """Choose the classical hyperparameters of `setting` on tuning prompts; write them."""
    spec, tuning = setting_spec(params, setting), params["tuning"]
    funcs = classical(params)
    mse: dict[str, np.ndarray] = {}
    for i, n in enumerate(params["sizes"]):
        rng = np.random.default_rng(derive_seed(tuning["seed"], STUDY, "tune", setting, n))
        prompts = make_prompts(spec, n, tuning["queries"], tuning["prompts"], rng)
        for method, grid_key in GRIDS.items():
            grid = tuning[grid_key]
            row = [squared_errors(prompts, funcs[method](prompts, v)).mean() for v in grid]
            mse.setdefault(method, np.empty((len(params["sizes"]), len(grid))))[i] = row
    chosen: dict[str, Any] = {"sizes": list(params["sizes"])}
    h0_grid = tuning["oracle_h0"]
    chosen["oracle_lp"] = [h0_grid[int(np.argmin(np.log(mse["oracle_lp"]).sum(0)))]] * len(
        params["sizes"]
    )
    for method in ("knn", "nw", "ambient_ll"):
        grid = tuning[GRIDS[method]]
        chosen[method] = [grid[int(j)] for j in np.argmin(mse[method], axis=1)]
    chosen["tuning_mse"] = dict(mse)
    write_json(out_path, chosen)
    return chosen


def read_tuning(paths: list[str | Path]) -> dict[str, dict[str, Any]]:
    """{setting: chosen hyperparameters} from tuning files named ``<setting>.json``."""
    return {Path(p).stem: read_json(p) for p in paths}


def build_networks(params: dict[str, Any]) -> dict[str, torch.nn.Module]:
    """The two trained networks, freshly initialised (call under a seeded torch RNG)."""
    two, lin = params["twostage"], params["lintf"]
    return {
        "twostage_tf": TwoStage(two["layers"], exact=False, init=two["init"]),
        "lintf": LinearTransformer(
            params["data"]["ambient_dim"], lin["width"], lin["layers"], lin["heads"]
        ),
    }


def exact_ablation(trained: TwoStage) -> TwoStage:
    """The trained two-stage network with its GD layers replaced by the closed-form solve:
    same geometry stage, bandwidth and ridge, so the difference is the solver's error."""
    exact = copy.deepcopy(trained)
    exact.exact = True
    return exact


def train_networks(
    params: dict[str, Any], seed: int, methods: list[str]
) -> tuple[dict[str, torch.nn.Module], dict[str, Any]]:
    """Train the networks `methods` needs on the seed's pool; their training summaries."""
    train = params["train"]
    if "twostage_exact" in methods and "twostage_tf" not in methods:
        raise ValueError("icl_manifold.methods: twostage_exact needs twostage_tf (its ablation)")
    settings = {s: setting_spec(params, s) for s in params["settings"]}
    pool_rng = np.random.default_rng(derive_seed(seed, STUDY, "pool"))
    pool = make_pool(settings, params["sizes"], train["queries"], train["pool_prompts"], pool_rng)
    torch.manual_seed(derive_seed(seed, STUDY, "init"))
    nets = {m: net for m, net in build_networks(params).items() if m in methods}
    summary: dict[str, Any] = {}
    for method, net in nets.items():
        rng = np.random.default_rng(derive_seed(seed, STUDY, "batches", method))
        result = train_model(net, pool, train[method], rng)
        tail = max(1, len(result.losses) // 10)
        summary[method] = {
            "first_loss": float(result.losses[:tail].mean()),
            "last_loss": float(result.losses[-tail:].mean()),
            "losses": result.losses,
            "parameters": int(sum(p.numel() for p in net.parameters())),
        }
        if isinstance(net, TwoStage):
            summary[method]["learned"] = {
                name: value.detach().double().numpy() for name, value in net.named_parameters()
            }
    if "twostage_exact" in methods:
        nets["twostage_exact"] = exact_ablation(nets["twostage_tf"])
    return nets, summary


def evaluate_seed(
    params: dict[str, Any],
    seed: int,
    tuned: dict[str, dict[str, Any]],
    threads: int,
    out_dir: str | Path,
) -> None:
    """Train the networks and evaluate every method for one seed; write the run's files."""
    methods = list(params["methods"])
    check_methods(methods)
    seed_everything(derive_seed(seed, STUDY, "job"), threads)
    nets, summary = train_networks(params, seed, methods)
    funcs = classical(params)
    sizes, ev = params["sizes"], params["eval"]
    arrays = {}
    for setting in progress(params["settings"], f"{STUDY} seed{seed}"):
        spec = setting_spec(params, setting)
        errors = np.empty((len(methods), len(sizes), ev["prompts"]))
        for i, n in enumerate(sizes):
            rng = np.random.default_rng(derive_seed(seed, STUDY, "eval", setting, n))
            prompts = make_prompts(spec, n, ev["queries"], ev["prompts"], rng)
            for m, method in enumerate(methods):
                if method in nets:
                    prediction = predict(nets[method], prompts, PREDICT_CHUNK)
                else:
                    prediction = funcs[method](prompts, tuned[setting][method][i])
                errors[m, i] = squared_errors(prompts, prediction)
        arrays[setting] = errors
    out = Path(out_dir)
    write_h5(
        out / "errors.h5",
        arrays,
        attrs={"methods": methods, "sizes": np.asarray(sizes, dtype=np.int64), "seed": seed},
    )
    write_json(out / "training.json", summary)
