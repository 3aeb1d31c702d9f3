"""The bilevel_ht table, claim checks and study metrics, from the per-job metrics files.

Table: rows = methods; per (topology, noise) three columns: the final upper-level loss F(λ̄_T)
and stationarity ‖λ̄ − Π(λ̄ − ∇F(λ̄))‖² (×1e4; both exact, mean ± std over the seeds that did not
diverge; NaN when none survived) and the fraction of seeds that diverged. With more than one
dataset every column name starts with the dataset.

Claims per dataset (core.claims; paired checks are one-sided paired t-tests over seeds,
Holm-adjusted within the study):
1. `count`: the method never diverges, at any topology, noise and seed (diverged runs ≤ 0);
2. `count`, per unnormalised method: it diverges under heavy-tailed noise but never under the
   Gaussian control (heavy-tailed divergences ≥ 1, control divergences ≤ 0);
per topology and heavy-tailed noise:
3. `paired`: the method reaches a lower final F than the best clipping threshold (the τ with the
   lowest mean F over the evaluation seeds among those that never diverged there: an oracle
   choice that favours clipping);
4. `bound`: the method is competitive with that best clipping: mean final F minus the best
   clipping's ≤ `competitive_margin`;
5. `paired`: the method beats the worst non-diverging clipping threshold (threshold
   sensitivity);
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

from reprolab.core.claims import bound_check, count_check, paired_check
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


def _clipping_extremes(jobs: list[dict], noise: str, clipping: Sequence[str]) -> tuple[str, str]:
    """Best and worst clipping threshold by mean F among those that never diverged here."""
    means = {c: float(np.mean(per_seed(jobs, noise, c, "F"))) for c in clipping}
    finite = {c: m for c, m in means.items() if np.isfinite(m)} or {clipping[0]: np.nan}
    return min(finite, key=finite.get), max(finite, key=finite.get)


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
    ours, checks, jobs = c["method"], [], runs["jobs"]
    for dataset in jobs:
        counts = _divergence_counts(params, jobs, dataset, ours)
        checks.append(
            count_check(
                f"{ours} converges in every seed, topology and noise ({dataset})",
                "diverged seeds",
                {"diverged runs": sum(counts.values())},
                {"diverged runs": ("at_most", 0)},
                {"per_setting": counts},
            )
        )
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
                checks += _paired_claims(params, topo_jobs, seeds, where, noise)
    return checks


def _paired_claims(
    params: dict[str, Any], jobs: list[dict], seeds: Sequence[int], where: str, noise: str
) -> list[dict]:
    """Claims 3-6 of the module docstring for one (dataset, topology, heavy-tailed noise)."""
    c = params["claims"]
    ours = c["method"]
    best, worst = _clipping_extremes(jobs, noise, c["clipping"])
    f_ours = per_seed(jobs, noise, ours, "F")
    f_best = per_seed(jobs, noise, best, "F")
    gap = float(np.mean(f_ours) - np.mean(f_best))
    out = [
        _lower_f(
            f"{ours} beats the best clipping threshold ({best}) on final F ({where})",
            ours,
            best,
            f_ours,
            f_best,
            seeds,
            c["alpha"],
        ),
        bound_check(
            f"{ours} is competitive with the best clipping threshold ({best}): mean final F "
            f"within {c['competitive_margin']} ({where})",
            "F",
            {f"mean F: {ours} - {best}": gap},
            "at_most",
            float(c["competitive_margin"]),
            {"mean_F": {ours: float(np.mean(f_ours)), best: float(np.mean(f_best))}},
        ),
        _lower_f(
            f"{ours} beats the worst clipping threshold ({worst}) on final F ({where})",
            ours,
            worst,
            f_ours,
            per_seed(jobs, noise, worst, "F"),
            seeds,
            c["alpha"],
        ),
        _lower_f(
            f"{ours} beats {c['ablation']} (no variance reduction) on final F ({where})",
            ours,
            c["ablation"],
            f_ours,
            per_seed(jobs, noise, c["ablation"], "F"),
            seeds,
            c["alpha"],
        ),
    ]
    return out


def _lower_f(
    statement: str,
    method: str,
    baseline: str,
    a: np.ndarray,
    b: np.ndarray,
    seeds: Sequence[int],
    alpha: float,
) -> dict:
    """Paired one-sided check that `method` reaches a lower final F than `baseline` (it fails,
    with a note, when a seed diverged on either side: that seed has no final F)."""
    return paired_check(
        statement, "F", method, baseline, a, b, seeds, direction="less", alpha=alpha
    )


def study_metrics(params: dict[str, Any], runs: dict, seeds: Sequence[int]) -> dict[str, Any]:
    """metrics.json: per dataset, topology, noise and method the final values' seed statistics."""
    out: dict[str, Any] = {"seeds": list(seeds)}
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

    F is what the table reports at the last iteration and what claims 3-6 compare; its path
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
    "Paired checks are one-sided paired t-tests over the seeds listed (same seed = same node "
    "split, minibatches and noise draws for every method), Holm-corrected within the study; "
    "they hold when the mean difference points the claimed way and the Holm-adjusted p < alpha, "
    "and fail when a seed diverged on either side. Count checks hold when every count is within "
    "its limit, the bound check when the mean F gap is at most the margin. The best/worst "
    "clipping threshold is picked on the evaluation seeds themselves, which favours clipping. "
    "The rules were fixed before any result was seen."
)
