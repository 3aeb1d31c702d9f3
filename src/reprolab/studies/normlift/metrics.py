"""Scores of a lifting: segmentation mIoU and mean class accuracy, reliability AUROC, and the
set of Gaussians a 3-D score counts.

3-D scores count only the Gaussians that some lifting view actually renders: those with weight
≥ `min_weight` at one pixel at least (`observed`). A Gaussian that every view sees only through
a sliver of its footprint, or behind others, gets its feature from whatever covers those pixels,
and no lifting rule can recover its class from 2-D features; real benchmarks likewise score the
reconstructed, visible surface. The set depends on the geometry and the views only, never on a
method's output, so every method is scored on the same Gaussians.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import rankdata

from reprolab.studies.normlift.lifting import Weights


def observed(weights: Weights, min_weight: float) -> np.ndarray:
    """[G] bool: Gaussians with weight ≥ `min_weight` at one pixel of one view at least."""
    peak = np.zeros(weights.n_gaussians)
    np.maximum.at(peak, weights.g, weights.w)
    return peak >= min_weight


def confusion(pred: np.ndarray, truth: np.ndarray, n_classes: int) -> np.ndarray:
    """[C, C] counts, rows = true class, columns = predicted class (entries with truth < 0,
    the ignored pixels, are dropped)."""
    keep = truth >= 0
    index = truth[keep] * n_classes + pred[keep]
    return np.bincount(index, minlength=n_classes * n_classes).reshape(n_classes, n_classes)


def mean_iou(pred: np.ndarray, truth: np.ndarray, n_classes: int) -> float:
    """Mean over the classes present in `truth` of TP / (TP + FP + FN)."""
    counts = confusion(pred, truth, n_classes)
    present = counts.sum(axis=1) > 0
    tp = np.diag(counts)
    union = counts.sum(axis=0) + counts.sum(axis=1) - tp
    return float(np.mean(tp[present] / union[present]))


def mean_accuracy(pred: np.ndarray, truth: np.ndarray, n_classes: int) -> float:
    """Mean over the classes present in `truth` of the share of that class predicted right."""
    counts = confusion(pred, truth, n_classes)
    present = counts.sum(axis=1) > 0
    return float(np.mean(np.diag(counts)[present] / counts.sum(axis=1)[present]))


def auroc(score: np.ndarray, positive: np.ndarray) -> float:
    """Area under the ROC curve of `score` for telling `positive` from the rest (the
    Mann–Whitney statistic, ties counted half); NaN when either group is empty."""
    positive = np.asarray(positive, dtype=bool)
    n_pos, n_neg = int(positive.sum()), int((~positive).sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    ranks = rankdata(score)
    return float((ranks[positive].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))
