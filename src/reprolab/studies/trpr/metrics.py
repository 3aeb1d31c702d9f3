"""Class-incremental measures: accuracy over the stream, forgetting, routing drift and how
forgetting spreads over instances by their drift.

* `stream_summary` of the accuracy matrix A[t, s] (accuracy on task s's test images after
  training task t, s ≤ t): average accuracy (the mean over steps t of the mean over seen tasks),
  final accuracy (the mean of the last row) and forgetting (the mean over all but the last task
  of its best accuracy before the end minus its final accuracy).
* `routing_drift`: per image, KL(p_then ‖ p_now) of its routing at the end of its task (then)
  and at the end of the stream (now), averaged over adapted blocks: how far its routing moved.
* `drift_quantile_losses`: images of old tasks split into equal-count bins by drift; per bin,
  the net loss (images right at the end of their task and wrong at the end, minus the reverse)
  as a share of the images in the bin and of the whole net loss. The abstract's asymmetry says
  the top bin carries most of the loss and the bottom bin loses nothing.
"""

from __future__ import annotations

import numpy as np
import torch


def stream_summary(matrix: np.ndarray) -> dict[str, float]:
    """Average accuracy, final accuracy and forgetting of the accuracy matrix [T, T] (entries
    above the diagonal are not read)."""
    tasks = matrix.shape[0]
    if matrix.shape != (tasks, tasks):
        raise ValueError(f"accuracy matrix of shape {matrix.shape}: expected [T, T]")
    steps = [matrix[t, : t + 1].mean() for t in range(tasks)]
    drops = [matrix[s:-1, s].max() - matrix[-1, s] for s in range(tasks - 1)]
    return {
        "average": float(np.mean(steps)),
        "final": float(matrix[-1].mean()),
        "forgetting": float(np.mean(drops)) if drops else 0.0,
    }


def routing_drift(log_then: torch.Tensor, log_now: torch.Tensor) -> torch.Tensor:
    """[N] mean over blocks of KL(p_then ‖ p_now), from log routing [A, N, E] of each image at
    the end of its task and at the end of the stream."""
    return (log_then.exp() * (log_then - log_now)).sum(-1).mean(0)


def drift_quantile_losses(
    drift: np.ndarray, right_then: np.ndarray, right_now: np.ndarray, bins: int
) -> dict[str, list[float]]:
    """Per drift bin (lowest drift first, equal counts, ties broken by image order): the bin's
    upper drift edge, its net loss rate (forgotten − recovered, over the bin's images) and its
    share of the whole net loss (NaN when the stream lost nothing on net)."""
    if not len(drift) == len(right_then) == len(right_now):
        raise ValueError("drift, right_then and right_now must have one entry per image")
    order = np.argsort(drift, kind="stable")
    parts = np.array_split(order, bins)
    net = right_then.astype(float) - right_now.astype(float)
    total = net.sum()
    return {
        "edge": [float(drift[part].max()) for part in parts],
        "loss_rate": [float(net[part].mean()) for part in parts],
        "loss_share": [float(net[part].sum() / total) if total else float("nan") for part in parts],
    }
