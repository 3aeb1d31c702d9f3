"""The `proofrank_tune` job: choose the technique classifier's regularisation.

The classifier is the study's measuring instrument for adaptivity and diversity (technique.py),
so what is tuned is how well it names the technique of theorems it never saw: on each tuning
seed the labelled corpus's theorems are dealt into `tune.folds` groups in that seed's order,
and each grid point is scored by the accuracy on the correct proofs of each group of a
classifier trained on the other groups. `core.tuning.tune` selects the best mean over the
tuning seeds. No backend, perturbation or evaluation seed enters, so no claim's measurement is
chosen on what it measures.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from reprolab.core.determinism import derive_seed
from reprolab.core.tuning import tune, write_tuning
from reprolab.studies.proofrank.corpus import Theorem
from reprolab.studies.proofrank.technique import predict, train_classifier

METHOD = "classifier"
METRIC = "technique accuracy on correct proofs of held-out theorems (grouped folds)"


def grouped_accuracy(
    theorems: Sequence[Theorem], regularisation: float, folds: int, seed: int
) -> float:
    """The share of correct proofs whose technique a classifier trained on the other folds'
    theorems names; theorems dealt into `folds` groups in the seed's order."""
    order = np.random.default_rng(derive_seed(seed, "proofrank", "folds")).permutation(
        len(theorems)
    )
    group = {theorems[i].theorem_id: k % folds for k, i in enumerate(order)}
    hits = total = 0
    for fold in range(folds):
        train = [p for t in theorems if group[t.theorem_id] != fold for p in t.proofs if p.correct]
        test = [p for t in theorems if group[t.theorem_id] == fold for p in t.proofs if p.correct]
        if not test:
            continue
        model = train_classifier(
            [p.text for p in train], [p.technique for p in train], regularisation
        )
        found = predict(model, [p.text for p in test])
        hits += sum(a == p.technique for a, p in zip(found, test, strict=True))
        total += len(test)
    return hits / total


def tune_classifier(
    params: Mapping[str, Any],
    theorems: Sequence[Theorem],
    seeds: Sequence[int],
    out_path: str | Path,
) -> dict[str, Any]:
    """Tune the regularisation over `tune.grid` on `seeds`; write the record."""
    folds = int(params["tune"]["folds"])
    if folds < 2 or folds > len(theorems):
        raise ValueError(
            f"proofrank.tune.folds: {folds} must lie between 2 and the {len(theorems)} theorems"
        )

    def evaluate(values: dict[str, Any], seed: int) -> float:
        return grouped_accuracy(theorems, float(values["regularisation"]), folds, seed)

    record = tune(METHOD, params["tune"]["grid"], evaluate, seeds, METRIC, "max")
    write_tuning(out_path, record)
    return record
