"""The `nicer_tune` job: choose one row's values on the tuning seeds.

One job per row. Every row's grid holds the classifier's learning rate; the rows that match
distributions (kmeans_dm, nicer) also hold the matching step size `dm_lr`, since Adam moves
every prototype by about that much per step whatever its weight. Each grid point condenses the
tuning seed's cohort at the table's budget (λ calibrated as in a run), trains on the seed's
training slides less a held-out `tune.validation_fraction` (stratified, drawn from the tuning
seed) and scores AUC on the held-out slides: never on the test split. `core.tuning.tune`
selects the best mean over the tuning seeds and writes the record the run jobs read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from reprolab.core.determinism import derive_seed, seed_everything
from reprolab.core.tuning import tune, write_tuning
from reprolab.studies.nicer.condense import Kernel, median_sigma2
from reprolab.studies.nicer.data import load_cohort, stratified_split
from reprolab.studies.nicer.jobs import condense_all, full_bags, lambdas, row_settings
from reprolab.studies.nicer.rows import FULL
from reprolab.studies.nicer.train import train_classifier

METRIC = "AUC on held-out training slides"


def tune_row(
    params: Mapping[str, Any],
    row: str,
    seeds: Sequence[int],
    features_dir: str | Path,
    labels_csv: str | Path,
    out_path: str | Path,
    threads: int,
) -> dict[str, Any]:
    """Tune `row` over `tune.grid.<row>` on `seeds`; write its record."""
    cohort = load_cohort(features_dir, labels_csv)
    kernel = Kernel(median_sigma2(cohort.features))
    budget = int(params["budget"])
    lam = lambdas(cohort, [budget])[budget]
    fraction = float(params["tune"]["validation_fraction"])
    condensed_sets: dict[tuple[int, Any], list[tuple[np.ndarray, np.ndarray]]] = {}

    def condensed(values: dict[str, Any], seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
        """The cohort's sets for a grid point (condensed once per seed and step size)."""
        key = (seed, values.get("dm_lr"))
        if key not in condensed_sets:
            found = condense_all(
                cohort, row, budget, lam, kernel, row_settings(params, values), seed
            )
            condensed_sets[key] = [(c.prototypes, c.weights) for c in found]
        return condensed_sets[key]

    def evaluate(values: dict[str, Any], seed: int) -> float:
        seed_everything(derive_seed(seed, "nicer"), threads)
        train_ids = np.flatnonzero(~stratified_split(cohort.labels, params["test_fraction"], seed))
        held = stratified_split(cohort.labels[train_ids], fraction, derive_seed(seed, "validation"))
        if row == FULL:
            sets = full_bags(cohort)
        else:
            sets = condensed(values, seed)
        fit, score = train_ids[~held], train_ids[held]
        result = train_classifier(
            [sets[i] for i in fit],
            cohort.labels[fit],
            [sets[i] for i in score],
            cohort.labels[score],
            float(values["lr"]),
            params,
            seed,
        )
        return float(result["auc"])

    record = tune(row, params["tune"]["grid"][row], evaluate, seeds, METRIC, "max")
    write_tuning(out_path, record)
    return record
