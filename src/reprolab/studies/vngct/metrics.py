"""Continual-learning scores from an accuracy matrix ``R[t, k]`` (after task t, on task k).

* final accuracy: mean of the last row, ``mean_k R[T−1, k]``;
* average accuracy: mean over t of the mean of ``R[t, :t+1]`` (the tasks seen so far);
* backward transfer: ``mean_{k<T−1} (R[T−1, k] − R[k, k])`` (negative = forgetting);
* forgetting of a slice of items (the visually necessary ones: visual forgetting, the
  text-answerable ones: text forgetting): ``mean_{k<T−1} (max_{t≥k} R[t, k] − R[T−1, k])``
  over the tasks that have such items, computed on the accuracy matrix of that slice (NaN
  entries mark tasks without any).
"""

from __future__ import annotations

import numpy as np


def final_accuracy(matrix: np.ndarray) -> float:
    """Mean accuracy over all tasks after the last task."""
    return float(np.mean(matrix[-1]))


def average_accuracy(matrix: np.ndarray) -> float:
    """Mean over steps t of the mean accuracy on tasks 0..t after task t."""
    return float(np.mean([np.mean(matrix[t, : t + 1]) for t in range(len(matrix))]))


def backward_transfer(matrix: np.ndarray) -> float:
    """Mean change from just after learning each task to the end (all tasks but the last)."""
    last = len(matrix) - 1
    return float(np.mean([matrix[last, k] - matrix[k, k] for k in range(last)]))


def forgetting(matrix: np.ndarray) -> float:
    """Mean drop from each earlier task's best accuracy to its final one; NaN columns skipped."""
    last = len(matrix) - 1
    drops = [
        np.max(matrix[k:, k]) - matrix[last, k] for k in range(last) if not np.isnan(matrix[k, k])
    ]
    return float(np.mean(drops)) if drops else float("nan")


def slice_matrix(correct: list[list[np.ndarray]], masks: list[np.ndarray]) -> np.ndarray:
    """Accuracy matrix over the items of each task picked by `masks` (NaN: no such items)."""
    return np.array(
        [
            [
                float(np.mean(c[m])) if m.any() else float("nan")
                for c, m in zip(row, masks, strict=True)
            ]
            for row in correct
        ]
    )
