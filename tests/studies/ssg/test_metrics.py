"""AUC helpers against scikit-learn, and the within-bag instance AUC."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import roc_auc_score

from reprolab.studies.ssg.metrics import auc, bag_metrics, instance_auc


def test_auc_matches_sklearn_with_ties():
    rng = np.random.default_rng(0)
    labels = rng.integers(0, 2, 200)
    scores = np.round(rng.standard_normal(200) + labels, 1)  # rounding creates ties
    assert auc(scores, labels) == pytest.approx(roc_auc_score(labels, scores), abs=1e-12)
    assert np.isnan(auc(scores[:3], np.ones(3)))


def test_bag_metrics_threshold_logits_at_zero():
    m = bag_metrics(np.array([-1.0, 0.5, 2.0, -0.2]), np.array([0, 0, 1, 1]))
    assert m["bag_accuracy"] == 0.5 and m["bag_auc"] == 0.75


def test_instance_auc_is_invariant_to_per_bag_rescaling_and_skips_negatives():
    scores = np.array([[0.9, 0.1, 0.2, 0.0], [0.3, 0.6, 0.1, 0.0], [5.0, 1.0, 1.0, 1.0]])
    mask = np.array([[1, 1, 1, 0], [1, 1, 1, 1], [1, 1, 1, 1]], dtype=bool)
    labels = np.array([[1, 0, 0, 0], [0, 1, 0, 0], [0, 0, 0, 0]])
    y = np.array([1, 1, 0])
    assert instance_auc(scores, mask, labels, y) == pytest.approx(1.0)
    scaled = scores * np.array([[100.0], [0.01], [1.0]])
    assert instance_auc(scaled, mask, labels, y) == pytest.approx(1.0)
    assert np.isnan(instance_auc(scores, mask, labels, np.array([0, 0, 0])))
    assert np.isnan(instance_auc(scores, mask, np.zeros_like(labels), y))  # no instance labels
