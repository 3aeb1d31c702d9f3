"""proofrank_tune: the classifier's regularisation is chosen by accuracy on held-out theorems."""

from __future__ import annotations

import pytest

from reprolab.core.tuning import read_tuning
from reprolab.studies.proofrank.corpus import bundled_files, read_corpus
from reprolab.studies.proofrank.tune import METHOD, grouped_accuracy, tune_classifier


@pytest.fixture(scope="module")
def theorems():
    return read_corpus(bundled_files())[0]


def test_grouped_accuracy_is_a_share_and_depends_on_the_seeds_grouping(theorems):
    first = grouped_accuracy(theorems, 0.3, folds=3, seed=1000)
    assert 0.5 < first <= 1.0
    assert grouped_accuracy(theorems, 0.3, folds=3, seed=1000) == first


def test_the_record_selects_the_best_mean_over_tuning_seeds(theorems, tmp_path):
    params = {"tune": {"folds": 3, "grid": {"regularisation": [0.3, 1000.0]}}}
    record = tune_classifier(params, theorems, [1000, 1001], tmp_path / "tuned.json")
    assert read_tuning(tmp_path / "tuned.json")["selected"] == record["selected"]
    assert record["method"] == METHOD
    scores = {t["values"]["regularisation"]: t["score"] for t in record["trials"]}
    assert record["selected"] == {"regularisation": max(scores, key=scores.get)}
    assert scores[0.3] > scores[1000.0]  # a heavy penalty predicts the commonest technique


def test_folds_must_fit_the_corpus(theorems, tmp_path):
    params = {"tune": {"folds": len(theorems) + 1, "grid": {"regularisation": [0.3]}}}
    with pytest.raises(ValueError, match="folds"):
        tune_classifier(params, theorems, [1000], tmp_path / "tuned.json")
