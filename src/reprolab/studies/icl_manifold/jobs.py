"""What one rule job of the icl_manifold study does.

* `tune_setting` (one job per setting): picks the classical estimators' hyperparameters on
  prompts of the tuning seeds only (params `tuning_seeds`, never an evaluation seed) — the
  oracle's bandwidth constant h₀ (one value per setting, best summed log MSE over the n grid,
  since its rate in n is the theory's), and kNN's k, Nadaraya–Watson's and ambient
  local-linear's bandwidths per n (the usual tuned-per-sample-size baselines). Writes a JSON
  file.
* `tune_network` (one job per trained network, `NETWORKS`): picks the network's Adam learning
  rate from its grid (`tuning.networks.grid`) at the shared training budget (`train`: steps,
  batch, clip, the same for both networks). Each grid point is trained on each tuning seed's
  own pool and scored by the validation log MSE (`validation_score`) on fresh prompts of that
  tuning seed; the selection is `core.tuning.tune`'s. Writes a core.tuning record.
* `evaluate_seed` (one job per seed): trains the two-stage network and the generic linear
  transformer on a training pool of the seed at the shared budget and with the learning rate
  each network's tuning record selected (the exact-solve ablation is the trained two-stage
  network with a closed-form solver), then evaluates every method on fresh evaluation prompts
  of the seed for every setting and n. Writes `errors.h5`: per setting a dataset (methods,
  len(sizes), prompts) of squared errors against the noiseless target (mean over the prompt's
  queries), and `training.json`.

A network's training on a seed (`train_network`) is the same function in the tuning and the
evaluation jobs: pool, initial weights and batch order come from the seed alone, so a tuning
trial is exactly the evaluation's training with a tuning seed in place of the table's seed.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from reprolab.core.determinism import derive_seed, seed_everything
from reprolab.core.io import read_json, write_h5, write_json
from reprolab.core.progress import progress
from reprolab.core.tuning import tune, write_tuning
from reprolab.studies.icl_manifold import estimators
from reprolab.studies.icl_manifold.manifolds import Prompts, make_prompts
from reprolab.studies.icl_manifold.models import LinearTransformer, TwoStage
from reprolab.studies.icl_manifold.spec import STUDY, setting_spec
from reprolab.studies.icl_manifold.train import make_pool, predict, train_model

METHODS = ("oracle_lp", "twostage_tf", "twostage_exact", "lintf", "knn", "nw", "ambient_ll")
NETWORKS = ("twostage_tf", "lintf")
"""The methods trained in context (each has a learning-rate tuning job)."""
PREDICT_CHUNK = 50
NETWORK_METRIC = "validation log MSE (mean over settings and n)"


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


def tune_setting(
    params: dict[str, Any], setting: str, tuning_seeds: Sequence[int], out_path: str | Path
) -> dict[str, Any]:
    """Choose the classical hyperparameters of `setting` on the prompts of the tuning seeds
    (`tuning.prompts` per seed and n; a value's MSE is the mean over all of them); write
    them."""
    spec, tuning = setting_spec(params, setting), params["tuning"]
    if not tuning_seeds:
        raise ValueError("icl_manifold tuning: no tuning seeds")
    funcs = classical(params)
    mse: dict[str, np.ndarray] = {}
    for i, n in enumerate(params["sizes"]):
        per_seed = []
        for seed in tuning_seeds:
            rng = np.random.default_rng(derive_seed(seed, STUDY, "tune", setting, n))
            per_seed.append(make_prompts(spec, n, tuning["queries"], tuning["prompts"], rng))
        for method, grid_key in GRIDS.items():
            grid = tuning[grid_key]
            row = [
                np.mean([squared_errors(p, funcs[method](p, v)).mean() for p in per_seed])
                for v in grid
            ]
            mse.setdefault(method, np.empty((len(params["sizes"]), len(grid))))[i] = row
    chosen: dict[str, Any] = {"sizes": list(params["sizes"]), "tuning_seeds": list(tuning_seeds)}
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


def build_network(params: dict[str, Any], method: str) -> torch.nn.Module:
    """One trained network, freshly initialised (call under a seeded torch RNG)."""
    if method == "twostage_tf":
        two = params["twostage"]
        return TwoStage(two["layers"], exact=False, init=two["init"])
    if method == "lintf":
        lin = params["lintf"]
        return LinearTransformer(
            params["data"]["ambient_dim"], lin["width"], lin["layers"], lin["heads"]
        )
    raise ValueError(f"icl_manifold: '{method}' is not a trained network; those are {NETWORKS}")


def training_pool(params: dict[str, Any], seed: int) -> list[Prompts]:
    """The seed's training pool: `train.pool_prompts` prompts per (setting, n)."""
    train = params["train"]
    settings = {s: setting_spec(params, s) for s in params["settings"]}
    rng = np.random.default_rng(derive_seed(seed, STUDY, "pool"))
    return make_pool(settings, params["sizes"], train["queries"], train["pool_prompts"], rng)


def budget(params: dict[str, Any], lr: float) -> dict[str, Any]:
    """The optimiser settings of a training run: the shared budget (`train`: steps, batch,
    clip — the same for every network) and the learning rate."""
    train = params["train"]
    return {"steps": train["steps"], "batch": train["batch"], "clip": train["clip"], "lr": lr}


def train_network(
    params: dict[str, Any], method: str, seed: int, pool: list[Prompts], lr: float
) -> tuple[torch.nn.Module, np.ndarray]:
    """Train network `method` on `pool` with learning rate `lr` at the shared budget; initial
    weights and batch order come from (seed, method). Returns the network and its per-step
    losses."""
    torch.manual_seed(derive_seed(seed, STUDY, "init", method))
    net = build_network(params, method)
    rng = np.random.default_rng(derive_seed(seed, STUDY, "batches", method))
    return net, train_model(net, pool, budget(params, lr), rng).losses


def validation_prompts(params: dict[str, Any], seed: int) -> dict[tuple[str, int], Prompts]:
    """A tuning seed's validation prompts, `tuning.networks.prompts` per (setting, n) of the
    evaluation grid: a stream of their own, apart from the seed's training pool."""
    cfg = params["tuning"]["networks"]
    out = {}
    for setting in params["settings"]:
        spec = setting_spec(params, setting)
        for n in params["sizes"]:
            rng = np.random.default_rng(derive_seed(seed, STUDY, "validation", setting, n))
            out[setting, n] = make_prompts(spec, n, cfg["queries"], cfg["prompts"], rng)
    return out


def validation_score(net: torch.nn.Module, prompts: dict[tuple[str, int], Prompts]) -> float:
    """Mean over (setting, n) of log MSE against the noiseless target: every cell counts in
    relative terms, as on the table's log-log axes (plain MSE would be the small n's). NaN
    when any prediction is not finite (a diverged run is never selected)."""
    logs = []
    for cell in prompts.values():
        err = float(squared_errors(cell, predict(net, cell, PREDICT_CHUNK)).mean())
        if not math.isfinite(err) or err <= 0:
            return math.nan
        logs.append(math.log(err))
    return float(np.mean(logs))


def tune_network(
    params: dict[str, Any],
    method: str,
    tuning_seeds: Sequence[int],
    threads: int,
    out_path: str | Path,
) -> dict[str, Any]:
    """Choose network `method`'s learning rate on the tuning seeds; write the core.tuning
    record (every trial, the selection, whether it sits on the grid's edge)."""
    if method not in NETWORKS:
        raise ValueError(f"icl_manifold: '{method}' is not a trained network; those are {NETWORKS}")
    if not tuning_seeds:
        raise ValueError("icl_manifold tuning: no tuning seeds")
    seed_everything(derive_seed(tuning_seeds[0], STUDY, "tune", method), threads)
    grid = params["tuning"]["networks"]["grid"][method]
    data: dict[int, tuple[list[Prompts], dict[tuple[str, int], Prompts]]] = {}

    def evaluate(values: dict[str, Any], seed: int) -> float:
        if seed not in data:
            data[seed] = training_pool(params, seed), validation_prompts(params, seed)
        pool, validation = data[seed]
        try:
            net, losses = train_network(params, method, seed, pool, float(values["lr"]))
            if not np.all(np.isfinite(losses)):
                return math.nan
            return validation_score(net, validation)
        except torch.linalg.LinAlgError:  # the geometry stage's eigh on a diverged network
            return math.nan

    record = tune(method, grid, evaluate, tuning_seeds, NETWORK_METRIC, "min")
    cfg = params["tuning"]["networks"]
    record["budget"] = {k: params["train"][k] for k in ("steps", "batch", "clip")} | {
        "pool_prompts": params["train"]["pool_prompts"],
        "queries": params["train"]["queries"],
    }
    record["validation"] = {
        "settings": list(params["settings"]),
        "sizes": list(params["sizes"]),
        "prompts": cfg["prompts"],
        "queries": cfg["queries"],
    }
    write_tuning(out_path, record)
    return record


def exact_ablation(trained: TwoStage) -> TwoStage:
    """The trained two-stage network with its GD layers replaced by the closed-form solve:
    same geometry stage, bandwidth and ridge, so the difference is the solver's error."""
    exact = copy.deepcopy(trained)
    exact.exact = True
    return exact


def train_networks(
    params: dict[str, Any], seed: int, methods: list[str], lrs: dict[str, dict[str, Any]]
) -> tuple[dict[str, torch.nn.Module], dict[str, Any]]:
    """Train the networks `methods` needs on the seed's pool, each with the learning rate its
    tuning record selected (`lrs`: core.tuning.selected of the records); their training
    summaries."""
    if "twostage_exact" in methods and "twostage_tf" not in methods:
        raise ValueError("icl_manifold.methods: twostage_exact needs twostage_tf (its ablation)")
    trained = [m for m in NETWORKS if m in methods]
    missing = [m for m in trained if m not in lrs]
    if missing:
        raise ValueError(f"icl_manifold: no learning-rate tuning record for {missing}")
    pool = training_pool(params, seed)
    nets: dict[str, torch.nn.Module] = {}
    summary: dict[str, Any] = {}
    for method in trained:
        lr = float(lrs[method]["lr"])
        net, losses = train_network(params, method, seed, pool, lr)
        nets[method] = net
        tail = max(1, len(losses) // 10)
        summary[method] = {
            "first_loss": float(losses[:tail].mean()),
            "last_loss": float(losses[-tail:].mean()),
            "losses": losses,
            "parameters": int(sum(p.numel() for p in net.parameters())),
            "optimiser": budget(params, lr),
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
    lrs: dict[str, dict[str, Any]],
    threads: int,
    out_dir: str | Path,
) -> None:
    """Train the networks (learning rates `lrs` from their tuning records, core.tuning.selected)
    and evaluate every method (classical hyperparameters `tuned`, per setting) for one seed;
    write the run's files."""
    methods = list(params["methods"])
    check_methods(methods)
    seed_everything(derive_seed(seed, STUDY, "job"), threads)
    nets, summary = train_networks(params, seed, methods, lrs)
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
