"""What a sequential run's trace says: whether a norm grew linearly or exponentially with the
edits, the usable horizon, and the long-run score.

* Growth: a norm series y over edit counts t is fitted by a line (y = a + b t, least squares)
  and by an exponential (log y = a + b t, least squares on the logarithm); each fit's R² is
  computed on y itself, so the two compete on the same scale. Growth is called exponential
  where the exponential's R² exceeds the line's.
* Horizon: the edit count of the first checkpoint whose efficacy falls below `threshold`; a run
  that never falls below it has the stream's length as its horizon and is marked censored (its
  true horizon is longer).
* Composite: the harmonic mean of efficacy, generalisation and specificity (the "Score" of ROME
  and MEMIT on CounterFact): an editor that edits nothing keeps specificity and still scores
  near zero, as does one that edits and breaks the rest.
* Long-run score: the composite at the last checkpoint.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

PARTS = ("efficacy", "generalisation", "specificity")


def r_squared(values: np.ndarray, fitted: np.ndarray) -> float:
    """1 − residual / total sum of squares (nan where `values` do not vary)."""
    total = float(((values - values.mean()) ** 2).sum())
    if total == 0.0:
        return float("nan")
    return 1.0 - float(((values - fitted) ** 2).sum()) / total


def growth_fits(edits: Sequence[float], norms: Sequence[float]) -> dict[str, float | bool]:
    """Linear and exponential fits of `norms` against `edits` (module docstring): each R², the
    exponential's rate per edit, and whether the exponential fits better."""
    t, y = np.asarray(edits, dtype=float), np.asarray(norms, dtype=float)
    if len(t) < 3 or np.any(y <= 0):
        raise ValueError("growth fits need at least 3 points of positive norms")
    slope, intercept = np.polyfit(t, y, 1)
    rate, log_intercept = np.polyfit(t, np.log(y), 1)
    linear = r_squared(y, intercept + slope * t)
    exponential = r_squared(y, np.exp(log_intercept + rate * t))
    return {
        "r2_linear": linear,
        "r2_exponential": exponential,
        "rate": float(rate),
        "exponential": bool(exponential > linear),
    }


def composite(checkpoint: dict[str, float]) -> float:
    """The harmonic mean of a checkpoint's efficacy, generalisation and specificity (0 where
    one of them is 0)."""
    parts = [float(checkpoint[p]) for p in PARTS]
    if min(parts) <= 0.0:
        return 0.0
    return len(parts) / sum(1.0 / p for p in parts)


def horizon(checkpoints: Sequence[dict[str, float]], threshold: float) -> tuple[int, bool]:
    """The horizon and whether it is censored (module docstring)."""
    for checkpoint in checkpoints:
        if checkpoint["efficacy"] < threshold:
            return int(checkpoint["edits"]), False
    return int(checkpoints[-1]["edits"]), True


def long_run_score(checkpoints: Sequence[dict[str, float]]) -> float:
    """The composite at the last checkpoint."""
    return composite(checkpoints[-1])
