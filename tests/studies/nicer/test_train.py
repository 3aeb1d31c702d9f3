"""nicer's classifier on weighted prototype sets: padding, balanced accuracy, and training on a
tiny separable problem (seeded, with the instances it saw counted)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from reprolab.studies.nicer.train import (
    balanced_accuracy,
    build_classifier,
    pad,
    predict,
    train_classifier,
)

PARAMS = {
    "model": {"hidden": 8, "attention_dim": 4, "dropout": 0.0},
    "train": {"epochs": 30, "batch_size": 4, "weight_decay": 0.0},
}


def separable_sets(
    seed: int, n: int = 16
) -> tuple[list[tuple[np.ndarray, np.ndarray]], np.ndarray]:
    """n slides of 2-4 prototypes in 4-d with Dirichlet weights; class 1 is shifted by +2 along
    the first axis, class 0 by −2."""
    rng = np.random.default_rng(seed)
    labels = np.arange(n) % 2
    sets = []
    for i, label in enumerate(labels):
        k = 2 + i % 3
        prototypes = rng.normal(0.0, 1.0, (k, 4)).astype(np.float32)
        prototypes[:, 0] += 2.0 if label else -2.0
        sets.append((prototypes, rng.dirichlet(np.ones(k)).astype(np.float32)))
    return sets, labels


def test_pad_stacks_sets_with_a_mask_and_unit_weights_in_the_padding():
    a = (np.arange(6, dtype=np.float32).reshape(3, 2), np.array([0.5, 0.3, 0.2], np.float32))
    b = (np.full((1, 2), 7.0, np.float32), np.array([1.0], np.float32))
    x, mask, w = pad([a, b])
    assert x.shape == (2, 3, 2) and mask.shape == w.shape == (2, 3)
    assert mask.tolist() == [[True, True, True], [True, False, False]]
    assert torch.equal(x[0], torch.from_numpy(a[0]))
    assert x[1, 0].tolist() == [7.0, 7.0] and torch.all(x[1, 1:] == 0)
    assert torch.allclose(w, torch.tensor([[0.5, 0.3, 0.2], [1.0, 1.0, 1.0]]))


def test_balanced_accuracy_is_the_mean_of_the_class_recalls():
    labels = np.array([1, 1, 1, 1, 0, 0])
    probabilities = np.array([0.9, 0.6, 0.5, 0.1, 0.2, 0.7])  # p = 0.5 counts as positive
    assert balanced_accuracy(probabilities, labels) == pytest.approx(0.5 * (3 / 4 + 1 / 2))
    assert balanced_accuracy(labels.astype(float), labels) == 1.0
    assert balanced_accuracy(1.0 - labels, labels) == 0.0


def test_balanced_accuracy_is_nan_when_a_class_is_absent():
    assert math.isnan(balanced_accuracy(np.array([0.2, 0.9]), np.array([1, 1])))
    assert math.isnan(balanced_accuracy(np.array([0.2, 0.9]), np.array([0, 0])))


def test_predict_matches_the_unbatched_model():
    sets, _ = separable_sets(0, n=5)
    torch.manual_seed(0)
    model = build_classifier(4, PARAMS["model"])
    batched = predict(model, sets, batch_size=2)
    single = predict(model, sets, batch_size=1)
    assert batched.shape == (5,) and batched.dtype == np.float64
    np.testing.assert_allclose(batched, single, atol=1e-6)


def test_training_separates_a_separable_problem_and_counts_instances():
    train, y_train = separable_sets(0)
    test, y_test = separable_sets(1)
    result = train_classifier(train, y_train, test, y_test, 0.01, PARAMS, seed=0)
    assert set(result) == {"balanced_accuracy", "auc", "instances_per_epoch"}
    assert all(math.isfinite(v) for v in result.values())
    assert result["balanced_accuracy"] == 1.0 and result["auc"] == 1.0
    assert result["instances_per_epoch"] == sum(len(c) for c, _ in train) == 47


def test_training_is_determined_by_the_seed():
    train, y_train = separable_sets(2)
    test, y_test = separable_sets(3)
    params = {**PARAMS, "train": {**PARAMS["train"], "epochs": 2}}

    def run(seed: int) -> dict:
        return train_classifier(train, y_train, test, y_test, 0.003, params, seed)

    first = run(5)
    torch.manual_seed(123)  # whatever the global generator's state, the seed alone decides
    torch.rand(7)
    assert run(5) == first
