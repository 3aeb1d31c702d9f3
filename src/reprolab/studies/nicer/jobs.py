"""The `nicer_run` job: one seed of the study, every row at every budget.

A seed's job reads the cohort (`data.load_cohort`), draws its train/test split, sets the kernel
bandwidth by the median heuristic and, per budget B of `budgets`, the DP-means threshold λ_B
at which the adaptive condensers' capacity averages B over the cohort's slides
(`condense.calibrate_lambda`; no labels are used). Then per budget each row condenses every
slide (`condense.condense`, randomness from the seed, the row and B), the classifier of
`train` is trained on the condensed training slides with the row's tuned learning rate (and,
for the matching rows, its tuned matching step size), and the test slides are scored. The
ablation rows (`ablations`) run at the table's budget only; `full` trains once on the full bags.

Per (row, budget) the metrics record balanced accuracy, AUC, prototypes per slide (mean, std
and per slide), MMD² of every test slide's condensed set to its tiles, the distance or kernel
evaluations condensation spent, and the instances the classifier saw per epoch. The kmeans and
nicer sets of the table's budget go to `condensed.h5` (prototypes, weights and each tile's
nearest prototype per slide), which the report draws on slide thumbnails.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import torch

from reprolab.core.determinism import derive_seed, seed_everything
from reprolab.core.io import write_h5, write_json
from reprolab.core.progress import progress
from reprolab.core.tuning import selected
from reprolab.studies.nicer.condense import (
    Condensed,
    Kernel,
    calibrate_lambda,
    condense_slides,
    median_sigma2,
    mmd2,
    opening_radii,
)
from reprolab.studies.nicer.data import Cohort, load_cohort, stratified_split
from reprolab.studies.nicer.rows import FULL
from reprolab.studies.nicer.train import WeightedSet, train_classifier

log = logging.getLogger(__name__)

SHARED_START = {"gmm": "kmeans", "kmeans_dm": "kmeans"}
"""Rows that start from another row's solution, whose random draws they share."""
DRAWN = ("kmeans", "nicer")
"""Rows whose condensed sets of the table's budget are written for the report."""


def row_budgets(params: Mapping[str, Any], row: str) -> list[int]:
    """The budgets a row runs at: all of them, the table's for an ablation, none for `full`."""
    if row == FULL:
        return []
    if row in params["ablations"]:
        return [int(params["budget"])]
    return [int(b) for b in params["budgets"]]


def lambdas(cohort: Cohort, budgets: Sequence[int]) -> dict[int, float]:
    """DP-means threshold per budget, calibrated on every slide of the cohort."""
    radii = [opening_radii(torch.from_numpy(x)) for x in cohort.features]
    return {int(b): calibrate_lambda(radii, float(b)) for b in budgets}


def condense_all(
    cohort: Cohort,
    row: str,
    budget: int,
    lam: float,
    kernel: Kernel,
    settings: Mapping[str, Any],
    seed: int,
) -> list[Condensed]:
    """Every slide of the cohort condensed by `row` at `budget`. Randomness comes from the seed,
    the budget and the row's start (`SHARED_START`): the rows built on k-means draw the same
    k-means solution, so GMM and matching are compared with k-means on common draws."""
    start = SHARED_START.get(row, row)
    generator = torch.Generator().manual_seed(derive_seed(seed, "nicer", "condense", start, budget))
    log.info("condensing %d slides with %s at B=%d", len(cohort.features), row, budget)
    return condense_slides(row, cohort.features, budget, lam, kernel, settings, generator)


def full_bags(cohort: Cohort) -> list[WeightedSet]:
    """Every slide as all its tiles with uniform weights: the `full` row's sets."""
    return [(x, np.full(len(x), 1.0 / len(x), np.float32)) for x in cohort.features]


def row_settings(params: Mapping[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
    """Condensation settings with a row's tuned matching step size when it has one."""
    return {**params["condense"], **({"dm_lr": values["dm_lr"]} if "dm_lr" in values else {})}


def set_mmd2(x: np.ndarray, condensed: Condensed, kernel: Kernel) -> float:
    """MMD² between a slide's tiles and its condensed set."""
    return float(
        mmd2(
            torch.from_numpy(x),
            torch.from_numpy(condensed.prototypes),
            torch.from_numpy(condensed.weights),
            kernel,
        )
    )


def evaluate_row(
    cohort: Cohort,
    sets: Sequence[tuple[np.ndarray, np.ndarray]],
    test: np.ndarray,
    lr: float,
    params: Mapping[str, Any],
    seed: int,
) -> dict[str, float]:
    """Train the classifier on the training slides' sets and score the test slides'."""
    train_ids, test_ids = np.flatnonzero(~test), np.flatnonzero(test)
    return train_classifier(
        [sets[i] for i in train_ids],
        cohort.labels[train_ids],
        [sets[i] for i in test_ids],
        cohort.labels[test_ids],
        lr,
        params,
        seed,
    )


def condensed_summary(
    cohort: Cohort, condensed: Sequence[Condensed], test: np.ndarray, kernel: Kernel
) -> dict[str, Any]:
    """Prototypes per slide, MMD² of the test slides' sets, evaluations spent, and how far the
    weights of any set are from summing to one."""
    sizes = np.array([len(c.weights) for c in condensed])
    test_mmd2 = [set_mmd2(cohort.features[i], condensed[i], kernel) for i in np.flatnonzero(test)]
    return {
        "prototypes_mean": float(sizes.mean()),
        "prototypes_std": float(sizes.std()),
        "prototypes": sizes.tolist(),
        "mmd2_test": float(np.mean(test_mmd2)),
        "operations_per_slide": float(np.mean([c.operations for c in condensed])),
        "weights_sum_error": float(
            max(abs(float(c.weights.astype(np.float64).sum()) - 1.0) for c in condensed)
        ),
    }


def run_seed(
    params: Mapping[str, Any],
    seed: int,
    features_dir: str | Path,
    labels_csv: str | Path,
    tuning_paths: Sequence[str | Path],
    metrics_path: str | Path,
    condensed_path: str | Path,
    threads: int,
) -> dict[str, Any]:
    """Run every row of `params` on one seed; write metrics and the drawn condensed sets."""
    seed_everything(derive_seed(seed, "nicer"), threads)
    tuned = selected(tuning_paths)
    cohort = load_cohort(features_dir, labels_csv)
    test = stratified_split(cohort.labels, float(params["test_fraction"]), seed)
    kernel = Kernel(median_sigma2(cohort.features))
    thresholds = lambdas(cohort, params["budgets"])
    rows: dict[str, Any] = {row: {} for row in params["rows"]}
    arrays: dict[str, np.ndarray] = {}
    plan = [(row, budget) for row in params["rows"] for budget in row_budgets(params, row)]
    if FULL in params["rows"]:
        sets = full_bags(cohort)
        lr = float(tuned[FULL]["lr"])
        rows[FULL]["full"] = evaluate_row(cohort, sets, test, lr, params, seed)
    for row, budget in progress(plan, f"nicer seed {seed}: condense and classify"):
        settings = row_settings(params, tuned[row])
        condensed = condense_all(cohort, row, budget, thresholds[budget], kernel, settings, seed)
        sets = [(c.prototypes, c.weights) for c in condensed]
        result = evaluate_row(cohort, sets, test, float(tuned[row]["lr"]), params, seed)
        rows[row][str(budget)] = result | condensed_summary(cohort, condensed, test, kernel)
        log.info("seed %d %s B=%d: %s", seed, row, budget, result["balanced_accuracy"])
        if row in DRAWN and budget == int(params["budget"]):
            for slide, c in zip(cohort.slides, condensed, strict=True):
                arrays[f"{row}/{slide}/prototypes"] = c.prototypes
                arrays[f"{row}/{slide}/weights"] = c.weights
                arrays[f"{row}/{slide}/assignment"] = c.assignment
    metrics = {
        "seed": int(seed),
        "slides": cohort.slides,
        "test": test.astype(int).tolist(),
        "labels": cohort.labels.tolist(),
        "heterogeneity": [None if np.isnan(h) else float(h) for h in cohort.heterogeneity],
        "tiles": [len(x) for x in cohort.features],
        "sigma2": kernel.sigma2,
        "lambda": {str(b): v for b, v in thresholds.items()},
        "tuned": {row: tuned[row] for row in params["rows"]},
        "rows": rows,
    }
    write_h5(condensed_path, arrays, {"budget": int(params["budget"]), "seed": int(seed)})
    write_json(metrics_path, metrics)
    return metrics
