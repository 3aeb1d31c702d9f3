"""The bilevel_ht table, claim checks and study metrics, from the per-job metrics files.

Table: rows = methods; per (topology, noise) three columns: the final upper-level loss F(λ̄_T)
and stationarity ‖λ̄ − Π(λ̄ − ∇F(λ̄))‖² (×1e4; both exact, mean ± std over the seeds that did not
diverge; NaN when none survived) and the fraction of seeds that diverged. With more than one
dataset every column name starts with the dataset. Every method ran at the step its tuning
record selected on the tuning seeds (metrics.json's `hyperparameters`, per job).

Claims per dataset (core.claims; paired checks are one-sided paired t-tests over seeds whose
mean F difference must also exceed `claims.min_effect`, Holm-adjusted within the study):
1. the method never diverges, at any topology, noise and seed. When its steps are normalised
   and T·max(η_y, η_v) ≤ the divergence bound, no run can diverge (|y|, |v| grow by at most η
   per iteration, gossip never increases them): then this is a `sanity` check (shown, not
   counted); otherwise a `count` check (diverged runs ≤ 0);
2. `count`: the method reaches the target F at some evaluation checkpoint within the budget,
   in every topology, noise and seed (runs that missed it ≤ 0; a run that diverged missed
   it). The target is the tuning score of `claims.target_method` (D-SGD at its
   Gaussian-tuned step, under the Gaussian control): chosen on the tuning seeds, before the
   evaluation seeds were run;
3. `count`, per unnormalised method: it diverges under heavy-tailed noise but never under the
   Gaussian control (heavy-tailed divergences ≥ 1, control divergences ≤ 0);
per topology and heavy-tailed noise:
4. `paired`: the method reaches a lower final F than the best clipping threshold, the one
   (of `claims.clipping`) with the lowest tuning score: chosen on the tuning seeds, before the
   evaluation seeds were run;
5. `bound`: the method is competitive with that clipping threshold: mean final F minus the
   clipping's ≤ `competitive_margin`;
6. `paired`: the method beats normalised momentum without variance reduction (the ablation).
A diverged seed has no final F, so a paired check with a diverged seed on either side fails.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from reprolab.core.claims import bound_check, count_check, paired_check, sanity_check
from reprolab.core.io import read_h5, read_json
from reprolab.core.summary import Table
from reprolab.core.tables import Record, curve_frame, seed_stats

FINAL, STATIONARITY, DIVERGED = "F", "stationarity (x1e4)", "diverged"
STATIONARITY_SCALE = 1e4
VALUES = ("F", "gradnorm2", "accuracy", "consensus")


def run_path(runs_dir: str | Path, dataset: str, topology: str, seed: int) -> Path:
    """Where the job of (dataset, topology, seed) writes its metrics.json."""
    return Path(runs_dir) / dataset / topology / f"seed{seed}" / "metrics.json"


def load_runs(params: dict[str, Any], seeds: Sequence[int], runs_dir: str | Path) -> dict:
    """{"jobs": {dataset: {topology: [metrics.json of seed 0, seed 1, ...]}}, "curves": the
    same nesting of `read_job_curves`' curves.h5 contents} read from runs_dir."""
    return {
        "jobs": load_jobs(params, seeds, runs_dir),
        "curves": load_curves(params, seeds, runs_dir),
    }


def load_jobs(params: dict[str, Any], seeds: Sequence[int], runs_dir: str | Path) -> dict:
    """{dataset: {topology: [metrics.json of seed 0, seed 1, ...]}} read from runs_dir."""
    return {
        dataset: {
            topo: [read_json(run_path(runs_dir, dataset, topo, s)) for s in seeds]
            for topo in params["topologies"]
        }
        for dataset in params["datasets"]
    }


def per_seed(jobs: list[dict], noise: str, method: str, key: str) -> np.ndarray:
    """One final value of one method under one noise, one per seed (NaN where it diverged)."""
    out = []
    for job in jobs:
        run = job["runs"][noise][method]
        value = float(run["diverged"]) if key == DIVERGED else run[key]
        out.append(np.nan if value is None or (key != DIVERGED and run["diverged"]) else value)
    return np.asarray(out, dtype=float)


def column(params: dict[str, Any], dataset: str, topology: str, noise: str, name: str) -> str:
    """A table column name; prefixed by the dataset when the study has several."""
    prefix = f"{dataset}, " if len(params["datasets"]) > 1 else ""
    return f"{prefix}{topology}, {noise}: {name}"


def columns(params: dict[str, Any]) -> list[str]:
    """Every table column, in params order."""
    return [
        column(params, d, t, n, name)
        for d in params["datasets"]
        for t in params["topologies"]
        for n in params["noises"]
        for name in (FINAL, STATIONARITY, DIVERGED)
    ]


def records(params: dict[str, Any], runs: dict, seeds: Sequence[int]) -> list[Record]:
    """Long-format records; diverged seeds are left out of F and stationarity."""
    out = []
    for dataset, topologies in runs["jobs"].items():
        for topo, jobs in topologies.items():
            for noise in params["noises"]:
                for method in params["methods"]:
                    cells = {
                        FINAL: per_seed(jobs, noise, method, "F"),
                        STATIONARITY: STATIONARITY_SCALE
                        * per_seed(jobs, noise, method, "gradnorm2"),
                        DIVERGED: per_seed(jobs, noise, method, DIVERGED),
                    }
                    for name, values in cells.items():
                        col = column(params, dataset, topo, noise, name)
                        kept = [
                            (s, v) for s, v in zip(seeds, values, strict=True) if np.isfinite(v)
                        ]
                        for seed, value in kept or [(seeds[0], np.nan)]:
                            out.append(Record(method, col, seed, value))
    return out


def _divergence_counts(params: dict, jobs: dict, dataset: str, method: str) -> dict[str, int]:
    """{"topology/noise": diverged seeds} of one method on one dataset."""
    return {
        f"{topo}/{noise}": int(np.sum(per_seed(topo_jobs, noise, method, DIVERGED)))
        for topo, topo_jobs in jobs[dataset].items()
        for noise in params["noises"]
    }


def hyperparameters(runs: dict) -> dict[str, dict[str, Any]]:
    """{method: what it ran with} (metrics.json's `hyperparameters`: step sizes, tuned values,
    tuning score); every job of the study must have run with the same values."""
    found = None
    for topologies in runs["jobs"].values():
        for jobs in topologies.values():
            for job in jobs:
                if found is None:
                    found = job["hyperparameters"]
                elif job["hyperparameters"] != found:
                    raise ValueError(
                        f"bilevel_ht: the job of {job['dataset']}/{job['topology']}/seed"
                        f"{job['seed']} ran with other tuned values than the others (stale runs: "
                        "rerun them with the current tuning records)"
                    )
    if found is None:
        raise ValueError("bilevel_ht: no runs")
    return found


def best_clipping(params: dict[str, Any], runs: dict) -> tuple[str, dict[str, float]]:
    """The clipping threshold (of claims.clipping) with the lowest tuning score, and every
    clipping method's score: the choice made on the tuning seeds (ties: params order)."""
    hyper = hyperparameters(runs)
    scores = {c: float(hyper[c]["tuning_score"]) for c in params["claims"]["clipping"]}
    return min(scores, key=scores.get), scores


def target_value(params: dict[str, Any], runs: dict) -> float:
    """The F claim 2 asks the method to reach: the tuning score of claims.target_method."""
    return float(hyperparameters(runs)[params["claims"]["target_method"]]["tuning_score"])


def iterations_to_target(jobs: list[dict], noise: str, method: str, target: float) -> list:
    """Per seed the first evaluation checkpoint at which F ≤ target (None: never, or the run
    diverged), from the jobs' curves (`read_job_curves`)."""
    out = []
    for curves in jobs:
        k, j = curves["noises"].index(noise), curves["methods"].index(method)
        reached = np.flatnonzero(np.asarray(curves["F"][k, j]) <= target)
        diverged = int(curves["diverged_at"][k, j]) >= 0
        out.append(None if diverged or reached.size == 0 else int(curves["iter"][reached[0]]))
    return out


def table(params: dict[str, Any], runs: dict, seeds: Sequence[int]) -> Table:
    """Rows = methods; per (dataset,) topology and noise: F, stationarity, diverged share."""
    return Table(
        records(params, runs, seeds),
        list(params["methods"]),
        columns(params),
        "Decentralised bilevel methods under Gaussian and heavy-tailed noise: final "
        "upper-level loss F, stationarity (mean ± std over non-diverged seeds) and the "
        "fraction of diverged seeds.",
    )


def claim_checks(params: dict[str, Any], runs: dict, seeds: Sequence[int]) -> list[dict]:
    """The claims of the module docstring, for every dataset."""
    c = params["claims"]
    checks, jobs = [], runs["jobs"]
    best, scores = best_clipping(params, runs)
    for dataset in jobs:
        checks.append(_never_diverges(params, runs, dataset))
        checks.append(_reaches_target(params, runs, dataset))
        for method in c["unnormalised"]:
            counts = _divergence_counts(params, jobs, dataset, method)
            heavy = sum(v for k, v in counts.items() if k.split("/")[1] in c["heavy_tailed"])
            control = sum(v for k, v in counts.items() if k.split("/")[1] == c["control"])
            checks.append(
                count_check(
                    f"{method} diverges under heavy-tailed noise but not under {c['control']} "
                    f"noise ({dataset})",
                    "diverged seeds",
                    {"heavy-tailed noise": heavy, "control noise": control},
                    {"heavy-tailed noise": ("at_least", 1), "control noise": ("at_most", 0)},
                    {
                        "per_setting": counts,
                        "heavy_tailed": list(c["heavy_tailed"]),
                        "control": c["control"],
                    },
                )
            )
        for topo, topo_jobs in jobs[dataset].items():
            for noise in c["heavy_tailed"]:
                where = f"{dataset}, {topo}, {noise}"
                checks += _paired_claims(params, topo_jobs, seeds, where, noise, best, scores)
    return checks


def _never_diverges(params: dict[str, Any], runs: dict, dataset: str) -> dict:
    """Claim 1: a sanity check when the method's normalised steps cannot reach the divergence
    bound within the budget, a count check otherwise."""
    ours = params["claims"]["method"]
    hyper = hyperparameters(runs)[ours]
    counts = _divergence_counts(params, runs["jobs"], dataset, ours)
    total = sum(counts.values())
    iterations = _iterations(runs)
    bound = float(params["optim"]["divergence_bound"])
    reach = iterations * max(hyper["eta"]["y"], hyper["eta"]["v"])
    statement = f"{ours} converges in every seed, topology and noise ({dataset})"
    details = {
        "per_setting": counts,
        "iterations": iterations,
        "eta": hyper["eta"],
        "T·max(η_y, η_v)": reach,
        "divergence_bound": bound,
    }
    if hyper["direction"] == "normalize" and reach <= bound:
        return sanity_check(
            statement,
            "diverged seeds",
            f"no run diverged; by construction, since a normalised step moves |y|, |v| by at "
            f"most η per iteration: T·max(η_y, η_v) = {reach:g} ≤ divergence bound {bound:g}",
            total == 0,
            details,
        )
    return count_check(
        statement,
        "diverged seeds",
        {"diverged runs": total},
        {"diverged runs": ("at_most", 0)},
        details,
    )


def _reaches_target(params: dict[str, Any], runs: dict, dataset: str) -> dict:
    """Claim 2: the method reaches, within the budget and in every run, the F that
    claims.target_method scored on the tuning seeds."""
    c = params["claims"]
    ours, target = c["method"], target_value(params, runs)
    reached = {
        f"{topo}/{noise}": iterations_to_target(curves, noise, ours, target)
        for topo, curves in runs["curves"][dataset].items()
        for noise in params["noises"]
    }
    missed = sum(v is None for values in reached.values() for v in values)
    return count_check(
        f"{ours} reaches F ≤ {target:g} within {_iterations(runs)} iterations in every seed, "
        f"topology and noise ({dataset})",
        "runs that missed the target",
        {"runs that missed the target": missed},
        {"runs that missed the target": ("at_most", 0)},
        {"target_F": target, "target_method": c["target_method"], "iterations_to_target": reached},
    )


def _iterations(runs: dict) -> int:
    """The iteration budget of the runs."""
    budgets = {
        run["iterations"]
        for topologies in runs["jobs"].values()
        for jobs in topologies.values()
        for job in jobs
        for by_method in job["runs"].values()
        for run in by_method.values()
    }
    if len(budgets) != 1:
        raise ValueError(f"bilevel_ht: runs with different iteration budgets {sorted(budgets)}")
    return budgets.pop()


def _paired_claims(
    params: dict[str, Any],
    jobs: list[dict],
    seeds: Sequence[int],
    where: str,
    noise: str,
    best: str,
    scores: dict[str, float],
) -> list[dict]:
    """Claims 4-6 of the module docstring for one (dataset, topology, heavy-tailed noise)."""
    c = params["claims"]
    ours = c["method"]
    f_ours = per_seed(jobs, noise, ours, "F")
    f_best = per_seed(jobs, noise, best, "F")
    gap = float(np.mean(f_ours) - np.mean(f_best))
    return [
        _lower_f(
            f"{ours} beats the best clipping threshold on the tuning seeds ({best}) on final F "
            f"({where})",
            ours,
            best,
            f_ours,
            f_best,
            seeds,
            c,
        ),
        bound_check(
            f"{ours} is competitive with the best clipping threshold on the tuning seeds "
            f"({best}): mean final F within {c['competitive_margin']} ({where})",
            "F",
            {f"mean F: {ours} - {best}": gap},
            "at_most",
            float(c["competitive_margin"]),
            {
                "mean_F": {ours: float(np.mean(f_ours)), best: float(np.mean(f_best))},
                "clipping_tuning_scores": scores,
            },
        ),
        _lower_f(
            f"{ours} beats {c['ablation']} (no variance reduction) on final F ({where})",
            ours,
            c["ablation"],
            f_ours,
            per_seed(jobs, noise, c["ablation"], "F"),
            seeds,
            c,
        ),
    ]


def _lower_f(
    statement: str,
    method: str,
    baseline: str,
    a: np.ndarray,
    b: np.ndarray,
    seeds: Sequence[int],
    claims: dict[str, Any],
) -> dict:
    """Paired one-sided check that `method` reaches a final F lower than `baseline`'s by more
    than claims.min_effect (it fails, with a note, when a seed diverged on either side: that
    seed has no final F)."""
    return paired_check(
        statement,
        "F",
        method,
        baseline,
        a,
        b,
        seeds,
        direction="less",
        alpha=claims["alpha"],
        min_effect=float(claims["min_effect"]),
    )


def study_metrics(params: dict[str, Any], runs: dict, seeds: Sequence[int]) -> dict[str, Any]:
    """metrics.json: per dataset, topology, noise and method the final values' seed statistics."""
    best, scores = best_clipping(params, runs)
    out: dict[str, Any] = {
        "seeds": list(seeds),
        "hyperparameters": hyperparameters(runs),
        "best_clipping": {"selected": best, "tuning_scores": scores},
    }
    for dataset, topologies in runs["jobs"].items():
        for topo, jobs in topologies.items():
            entry = out.setdefault(dataset, {}).setdefault(topo, {})
            entry["spectral_gap"] = jobs[0]["spectral_gap"]
            for noise in params["noises"]:
                for method in params["methods"]:
                    stats = {key: seed_stats(per_seed(jobs, noise, method, key)) for key in VALUES}
                    stats["diverged_seeds"] = int(np.sum(per_seed(jobs, noise, method, DIVERGED)))
                    entry.setdefault(noise, {})[method] = stats
    return out


def read_job_curves(path: str | Path) -> dict[str, Any]:
    """A job's curves.h5 arrays, with its noise and method names (root attributes) added.

    The same file `jobs.read_curves` reads; kept here so the summary does not import the
    optimisation code (and sklearn) into the report environment.
    """
    import h5py

    with h5py.File(path, "r") as handle:
        names = {key: json.loads(handle.attrs[key]) for key in ("noises", "methods")}
    return {**read_h5(path), **names}


def load_curves(params: dict[str, Any], seeds: Sequence[int], runs_dir: str | Path) -> dict:
    """{dataset: {topology: [curves of seed 0, seed 1, ...]}} (see `read_job_curves`)."""
    return {
        dataset: {
            topo: [
                read_job_curves(run_path(runs_dir, dataset, topo, s).with_name("curves.h5"))
                for s in seeds
            ]
            for topo in params["topologies"]
        }
        for dataset in params["datasets"]
    }


def curve_rows(params: dict[str, Any], runs: dict, seeds: Sequence[int]) -> pd.DataFrame:
    """curves.csv: upper-level loss F(λ̄) against iteration, mean over non-diverged seeds.

    F is what the table reports at the last iteration and what claims 2 and 4-6 read; its path
    shows how fast each method gets there and where an unnormalised one blows up. One series
    per `<topology>/<noise>/<method>` (prefixed `<dataset>/` when the study has several, as the
    table's columns are); x = iteration (the checkpoints every `eval_every`, from 0). A seed in
    which the method diverged is left out of every point of that series, as it is left out of
    the table's F; a series with no surviving seed has no rows. Rows are `x,series,y`, sorted by
    (series, x); the curves are `runs["curves"]`, {dataset: {topology: [curves per seed]}}: arrays
    `iter` [E], `F` [noise, method, E] and `diverged_at` [noise, method] (−1: never), and the
    lists `noises` and `methods` naming the first two axes.
    """
    points = []
    for dataset, topologies in runs["curves"].items():
        prefix = f"{dataset}/" if len(params["datasets"]) > 1 else ""
        for topo, jobs in topologies.items():
            for k, noise in enumerate(jobs[0]["noises"]):
                for j, method in enumerate(jobs[0]["methods"]):
                    kept = [job["F"][k, j] for job in jobs if job["diverged_at"][k, j] < 0]
                    if not kept:
                        continue
                    mean = np.mean(kept, axis=0)
                    points += [
                        (f"{prefix}{topo}/{noise}/{method}", int(x), float(y))
                        for x, y in zip(jobs[0]["iter"], mean, strict=True)
                    ]
    return curve_frame(points)


NOTES = (
    "Every method ran at the step size its tuning job selected on the tuning seeds (disjoint "
    "from the evaluation seeds; metrics.json `tuning`); the 'best clipping threshold' is the one "
    "with the lowest tuning score, chosen before the evaluation seeds were run. Paired checks "
    "are one-sided paired t-tests over the seeds listed (same seed = same node split, minibatches "
    "and noise draws for every method), Holm-corrected within the study; they hold when the mean "
    "F difference points the claimed way by more than min_effect and the Holm-adjusted p < alpha, "
    "and fail when a seed diverged on either side. Count checks hold when every count is within "
    "its limit, the bound check when the mean F gap is at most the margin; a sanity check (the "
    "method cannot diverge when its normalised steps cannot reach the divergence bound) is shown "
    "but not counted. The rules and min_effect were fixed before the evaluation run; the target "
    "F is a tuning score, known before it."
)
