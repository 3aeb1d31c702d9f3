"""Segmentation scores, AUROC and the observed set on hand-made cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from reprolab.studies.normlift.lifting import Weights
from reprolab.studies.normlift.metrics import auroc, mean_accuracy, mean_iou, observed


def test_mean_iou_and_accuracy_by_hand():
    truth = np.array([0, 0, 0, 1, 1, -1])
    pred = np.array([0, 0, 1, 1, 2, 2])
    # class 0: TP 2, FN 1, FP 0 -> 2/3; class 1: TP 1, FN 1, FP 1 -> 1/3; class 2 absent.
    assert mean_iou(pred, truth, 3) == pytest.approx((2 / 3 + 1 / 3) / 2)
    assert mean_accuracy(pred, truth, 3) == pytest.approx((2 / 3 + 1 / 2) / 2)


def test_auroc_counts_pairs_and_ties():
    score = np.array([0.1, 0.4, 0.4, 0.9])
    positive = np.array([False, True, False, True])
    # pairs (pos, neg): (0.4, 0.1) 1, (0.4, 0.4) 0.5, (0.9, 0.1) 1, (0.9, 0.4) 1 -> 3.5 / 4
    assert auroc(score, positive) == pytest.approx(3.5 / 4)
    assert math.isnan(auroc(score, np.zeros(4, dtype=bool)))


def test_observed_needs_one_pixel_above_the_threshold():
    weights = Weights(
        g=np.array([0, 0, 1, 2]),
        v=np.array([0, 1, 0, 1]),
        p=np.array([0, 0, 1, 1]),
        w=np.array([0.05, 0.3, 0.09, 0.1]),
        n_gaussians=4,
        n_views=2,
        n_pixels=2,
    )
    assert observed(weights, 0.1).tolist() == [True, False, True, False]
