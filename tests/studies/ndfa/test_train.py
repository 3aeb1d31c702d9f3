"""train_run end to end at a tiny config: API shape and byte-level determinism."""

from __future__ import annotations

import numpy as np
import pytest

from reprolab.studies.ndfa.data import load_task
from reprolab.studies.ndfa.train import METHODS, train_run
from tests.studies.ndfa.tiny import SURROGATE, TASK, TRAIN


@pytest.mark.parametrize("method", METHODS)
def test_train_run_is_deterministic(method):
    split = load_task(TASK, 0)
    a = train_run(TASK, method, TRAIN, SURROGATE, split, 0, 1, progress=False)
    b = train_run(TASK, method, TRAIN, SURROGATE, split, 0, 1, progress=False)
    assert a.metrics == b.metrics
    for key in a.curves:
        assert np.array_equal(a.curves[key], b.curves[key])
    assert {"test_accuracy", "train_accuracy", "final_loss", "mean_alignment"} <= set(a.metrics)
    assert [f"alignment_layer{i}" for i in (1, 2, 3)] == sorted(
        k for k in a.metrics if k.startswith("alignment_layer")
    )
    assert a.curves["alignment"].shape == (2, 3) and a.curves["epoch"].tolist() == [1, 2]


def test_methods_share_initial_network_and_bp_aligns_perfectly():
    split = load_task(TASK, 0)
    zero = {**TRAIN, "epochs": 1, "lr": 1e-12}
    runs = {m: train_run(TASK, m, zero, SURROGATE, split, 0, 1, progress=False) for m in METHODS}
    assert runs["bp"].metrics["mean_alignment"] == pytest.approx(1.0, abs=1e-12)
    accs = {r.metrics["test_accuracy"] for r in runs.values()}
    assert len(accs) == 1  # same start, (almost) no movement: same predictions


def test_jvp_surrogate_and_sgd_cosine_options_run():
    split = load_task(TASK, 0)
    train = {**TRAIN, "optimizer": "sgd", "momentum": 0.9, "schedule": "cosine"}
    res = train_run(TASK, "ndfa", train, {**SURROGATE, "jvp_weight": 1.0}, split, 0, 1, False)
    assert 0.0 <= res.metrics["test_accuracy"] <= 1.0


def test_tiny_resnet_with_augmentation_runs():
    rng = np.random.default_rng(0)
    from reprolab.studies.ndfa.data import Split

    split = Split(
        rng.standard_normal((16, 3, 8, 8)).astype(np.float32),
        rng.integers(0, 3, 16),
        rng.standard_normal((8, 3, 8, 8)).astype(np.float32),
        rng.integers(0, 3, 8),
        3,
        (3, 8, 8),
    )
    task = {"arch": "resnet", "widths": [4, 8], "blocks_per_stage": [1, 1], "augment": "crop_flip"}
    train = {**TRAIN, "epochs": 1, "batch_size": 8, "align_batch": 8}
    res = train_run(task, "ndfa", train, SURROGATE, split, 0, 1, progress=False)
    assert res.curves["alignment"].shape == (1, 2)
