"""The ssg table, claim checks and study metrics, from the per-run metrics files.

Runs live at ``<runs_dir>/<dataset>/<method>/seed<k>/metrics.json``, one per (dataset, method)
pair of `workflow_io.run_plan(params)`, the function the workflow builds its targets from.

Table: rows = methods; per table dataset three columns: bag AUC, bag accuracy and instance AUC
(mean ± std over seeds). Claims, each of kind `paired` (core.claims: a one-sided test over
seeds, Holm-adjusted p < alpha over the study's checks, and a mean difference above the
minimum effect `claims.min_effect` fixed in params):
(a) per dataset, SSG-UOT beats the best baseline on bag AUC ("consistent gains" = it holds on
    every dataset); the best baseline is the one with the highest mean on that dataset and
    metric, i.e. the strongest competitor, chosen after the fact (conservative);
(b) the same on instance-localisation AUC;
(c) SSG-UOT's gain over ABMIL (its own network without grounding; same seed ⇒ same data and
    initial weights) is larger in the sparse + heterogeneous regime than in each comparison
    regime, on instance AUC and on bag AUC. The regimes are different datasets, so seed k of
    one and seed k of the other share nothing: Welch's unpaired t-test on the per-seed gains.
Sweep: per (witness rate, heterogeneity) cell the mean of each metric for the sweep's methods
and SSG-UOT's mean gain over ABMIL, written to metrics.json (a figure, not a claim).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from reprolab.core.claims import paired_check
from reprolab.core.summary import Table
from reprolab.core.tables import Record, curve_frame, seed_stats
from reprolab.studies.ssg.storage import read_run_curves, read_run_metrics
from reprolab.studies.ssg.workflow_io import run_plan, sweep_cells

METRICS = {"bag_auc": "bag AUC", "bag_accuracy": "bag acc", "instance_auc": "instance AUC"}
METHOD, BASE = "ssg_uot", "abmil"


def load_runs(params: dict[str, Any], seeds: Sequence[int], runs_dir: Path) -> dict:
    """{"metrics": {dataset: {method: [metrics of seed 0, ...]}} for every planned run,
    "curves": {dataset: {method: [curves.h5 arrays of seed 0, ...]}} of the table's runs}."""
    root = Path(runs_dir)
    metrics: dict[str, dict[str, list]] = {}
    for dataset, method in run_plan(params):
        metrics.setdefault(dataset, {})[method] = [
            read_run_metrics(root / dataset / method / f"seed{s}" / "metrics.json") for s in seeds
        ]
    curves = {
        dataset: {
            method: [
                read_run_curves(root / dataset / method / f"seed{s}" / "curves.h5") for s in seeds
            ]
            for method in params["methods"]
        }
        for dataset in params["datasets"]
    }
    return {"metrics": metrics, "curves": curves}


def per_seed(runs: dict, dataset: str, method: str, metric: str) -> np.ndarray:
    """One metric of one method on one dataset, one value per seed (`runs` = load_runs's)."""
    return np.asarray([run[metric] for run in runs["metrics"][dataset][method]], dtype=float)


def records(params: dict[str, Any], runs: dict, seeds: Sequence[int]) -> list[Record]:
    """Long-format records of the table datasets."""
    out = []
    for dataset in params["datasets"]:
        for method in params["methods"]:
            for metric, label in METRICS.items():
                values = per_seed(runs, dataset, method, metric)
                out += [
                    Record(method, f"{dataset}: {label}", s, v)
                    for s, v in zip(seeds, values, strict=True)
                ]
    return out


def table(params: dict[str, Any], runs: dict, seeds: Sequence[int]) -> Table:
    """Rows = methods; bag AUC, bag accuracy and instance AUC per table dataset."""
    return Table(
        records(params, runs, seeds),
        list(params["methods"]),
        [f"{d}: {label}" for d in params["datasets"] for label in METRICS.values()],
        "SSG-UOT against MIL baselines: bag AUC, bag accuracy and instance-localisation "
        "AUC, mean ± std over seeds.",
    )


def best_baseline(params: dict[str, Any], runs: dict, dataset: str, metric: str) -> str:
    """The baseline with the highest mean `metric` on `dataset` (first listed wins ties)."""
    baselines = [m for m in params["methods"] if m != METHOD]
    means = [per_seed(runs, dataset, m, metric).mean() for m in baselines]
    return baselines[int(np.argmax(means))]


def claim_checks(params: dict[str, Any], runs: dict, seeds: Sequence[int]) -> list[dict]:
    """Claims (a), (b) and (c) of the module docstring."""
    alpha, min_effect, checks = params["claims"]["alpha"], params["claims"]["min_effect"], []
    for metric, what in (("bag_auc", "(a)"), ("instance_auc", "(b)")):
        for dataset in params["datasets"]:
            base = best_baseline(params, runs, dataset, metric)
            checks.append(
                paired_check(
                    f"{what} SSG-UOT beats the best baseline ({base}) on {METRICS[metric]} "
                    f"({dataset})",
                    f"{dataset}: {METRICS[metric]}",
                    METHOD,
                    base,
                    per_seed(runs, dataset, METHOD, metric),
                    per_seed(runs, dataset, base, metric),
                    seeds,
                    alpha=alpha,
                    min_effect=min_effect,
                )
            )
    target = params["claims"]["sparse_heterogeneous"]
    for metric in ("instance_auc", "bag_auc"):
        gain = {
            d: per_seed(runs, d, METHOD, metric) - per_seed(runs, d, BASE, metric)
            for d in [target, *params["claims"]["compare_regimes"]]
        }
        for other in params["claims"]["compare_regimes"]:
            checks.append(
                paired_check(
                    f"(c) SSG-UOT's {METRICS[metric]} gain over ABMIL is larger in {target} "
                    f"than in {other}",
                    f"gain in {METRICS[metric]} over {BASE}",
                    f"{target}",
                    f"{other}",
                    gain[target],
                    gain[other],
                    seeds,
                    test="welch",
                    alpha=alpha,
                    min_effect=min_effect,
                )
            )
    return checks


def study_metrics(params: dict[str, Any], runs: dict, seeds: Sequence[int]) -> dict[str, Any]:
    """metrics.json: per dataset/method/metric mean, std, per-seed values; the sweep grid."""
    out: dict[str, Any] = {"seeds": list(seeds), "datasets": {}, "sweep": []}
    for dataset, methods in runs["metrics"].items():
        for method, seed_runs in methods.items():
            out["datasets"].setdefault(dataset, {})[method] = {
                metric: seed_stats(per_seed(runs, dataset, method, metric))
                for metric in seed_runs[0]
            }
    for w, h, name, _ in sweep_cells(params):
        methods = params["sweep"]["methods"]
        cell: dict[str, Any] = {"dataset": name, "witness_rate": w, "heterogeneity": h}
        for metric in METRICS:
            for method in methods:
                cell[f"{method}:{metric}"] = per_seed(runs, name, method, metric).mean()
            if {METHOD, BASE} <= set(methods):
                cell[f"gain:{metric}"] = cell[f"{METHOD}:{metric}"] - cell[f"{BASE}:{metric}"]
        out["sweep"].append(cell)
    return out


def curve_rows(params: dict[str, Any], runs: dict, seeds: Sequence[int]) -> pd.DataFrame:
    """curves.csv: test bag AUC against epoch, one series `<dataset>/<method>`, seed mean.

    Bag AUC is the table's first column and claim (a)'s metric; its curve over epochs (the test
    set after every epoch, the last point being the table's cell) shows whether a change moved
    where a method ends up or only how fast it gets there, and when grounding's warm-up ends.
    Only the table's datasets (not the sweep's cells). Rows are `x,series,y` (x = epoch, from
    1), sorted by (series, x); epochs whose seed mean is undefined (a one-class test set gives
    no AUC) are left out. The curves are `runs["curves"]`, {dataset: {method: [per-seed
    arrays]}}.
    """
    points = []
    for dataset, methods in runs["curves"].items():
        for method, seed_curves in methods.items():
            epochs = seed_curves[0]["epoch"]
            auc = np.mean([c["bag_auc"] for c in seed_curves], axis=0)
            points += [
                (f"{dataset}/{method}", int(x), float(y)) for x, y in zip(epochs, auc, strict=True)
            ]
    return curve_frame(points)


NOTES = (
    "Claims (a) and (b) are one-sided paired t-tests over the seeds listed (same seed = same "
    "data and, for ABMIL-based methods, the same initial weights); claim (c) compares gains in "
    "different datasets, which no seed pairs, by Welch's unpaired t-test. All are "
    "Holm-corrected within the study; a claim holds when the mean difference points the "
    "claimed way by more than the minimum effect and the adjusted p < alpha. 'Best "
    "baseline' is the strongest baseline on that dataset and metric by mean over seeds. The "
    "rule was fixed before any result was seen."
)
