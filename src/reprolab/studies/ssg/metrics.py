"""Evaluation metrics: bag AUC, bag accuracy and instance-localisation AUC.

Instance AUC is the mean over positive test bags of the within-bag AUC of the instance score
against the evidence labels (bags with only evidence or none are skipped). We average within
bags rather than pool all instances because attention is normalised per bag (its scale is
~1/n), so pooled scores would rank bag sizes as much as instances; within-bag AUC is invariant
to any per-bag monotone rescaling, which makes attention, instance logits and grounding
strengths comparable. Negative bags carry no evidence and therefore no localisation question.
Without instance labels (e.g. TCGA slides: all zero) the instance AUC is NaN (null in JSON).
"""

from __future__ import annotations

import numpy as np
from scipy.stats import rankdata


def auc(scores: np.ndarray, labels: np.ndarray) -> float:
    """ROC AUC via the Mann–Whitney statistic (ties count one half); NaN if one class is absent."""
    labels = np.asarray(labels).astype(bool)
    n_pos, n_neg = int(labels.sum()), int((~labels).sum())
    if n_pos == 0 or n_neg == 0:
        return float("nan")
    ranks = rankdata(np.asarray(scores, dtype=np.float64))
    return float((ranks[labels].sum() - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg))


def bag_metrics(logits: np.ndarray, y: np.ndarray) -> dict[str, float]:
    """Bag AUC and accuracy of sigmoid(logit) ≥ 0.5."""
    return {
        "bag_auc": auc(logits, y),
        "bag_accuracy": float(np.mean((np.asarray(logits) >= 0) == (np.asarray(y) > 0.5))),
    }


def instance_auc(
    scores: np.ndarray, mask: np.ndarray, instance_labels: np.ndarray, y: np.ndarray
) -> float:
    """Mean within-bag AUC over positive bags (padded arrays (N, n_max) with a validity mask).

    NaN when no positive bag has both evidence and other instances.
    """
    values = []
    for s, valid, lab, label in zip(scores, mask, instance_labels, y, strict=True):
        if label > 0.5:
            value = auc(s[valid], lab[valid])
            if not np.isnan(value):
                values.append(value)
    return float(np.mean(values)) if values else float("nan")
