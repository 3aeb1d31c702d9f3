"""train_run end to end at a tiny config: every method runs, metrics are byte-deterministic."""

from __future__ import annotations

import numpy as np
import pytest

from reprolab.studies.ssg.data import make_dataset
from reprolab.studies.ssg.train import METHODS, train_run
from tests.studies.ssg.specs import MODEL
from tests.studies.ssg.specs import SYNTHMIL as SPEC

TRAIN = {"epochs": 3, "batch_size": 8, "lr": 3e-3, "weight_decay": 0.0, "device": "cpu"}


@pytest.fixture(scope="module")
def bags():
    return make_dataset(SPEC, 0)


@pytest.mark.parametrize("method", METHODS)
def test_train_run_is_deterministic(bags, method):
    a = train_run(*bags, method, MODEL, TRAIN, 0, 1)
    b = train_run(*bags, method, MODEL, TRAIN, 0, 1)
    assert a.metrics == b.metrics
    for key in a.curves:
        assert np.array_equal(a.curves[key], b.curves[key])
    assert {"bag_auc", "bag_accuracy", "instance_auc", "final_loss"} <= set(a.metrics)
    assert ("instance_auc_grounding" in a.metrics) == (method.endswith(("grounding", "ot", "uot")))
    assert a.curves["epoch"].tolist() == [1, 2, 3] and a.seconds > 0
    assert 0.0 <= a.metrics["instance_auc"] <= 1.0


def test_grounding_changes_training_only_after_warmup(bags):
    """Before the warm-up ends SSG-UOT is exactly ABMIL (same init, same batches, same loss)."""
    early = {**TRAIN, "epochs": 1}
    abmil = train_run(*bags, "abmil", MODEL, early, 0, 1)
    ssg = train_run(*bags, "ssg_uot", MODEL, early, 0, 1)
    assert abmil.metrics["bag_auc"] == ssg.metrics["bag_auc"]
    assert abmil.curves["train_loss"][0] == ssg.curves["train_loss"][0]
    late_abmil = train_run(*bags, "abmil", MODEL, TRAIN, 0, 1)
    late_ssg = train_run(*bags, "ssg_uot", MODEL, TRAIN, 0, 1)
    assert late_abmil.curves["train_loss"][-1] != late_ssg.curves["train_loss"][-1]


def test_unknown_method_is_rejected(bags):
    with pytest.raises(ValueError, match="unknown method"):
        train_run(*bags, "dsmil", MODEL, TRAIN, 0, 1)
