"""Claim checks: a paper's statement tested on paired per-seed values.

Every check compares a method against a baseline seed by seed (the same seed gives both the same
data split and initial draw), so the test is paired: a one-sided paired t-test by default, or a
sign test when the study asks for one. The pass rule is fixed before the numbers are seen:
`holds` when the mean paired difference points the claimed way and p < alpha.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
from scipy import stats

Direction = Literal["greater", "less"]
Test = Literal["paired_t", "sign"]


def paired_check(
    statement: str,
    metric: str,
    method: str,
    baseline: str,
    method_values: Sequence[float],
    baseline_values: Sequence[float],
    seeds: Sequence[int],
    direction: Direction = "greater",
    test: Test = "paired_t",
    alpha: float = 0.05,
) -> dict[str, Any]:
    """Test "`method` is `direction` than `baseline` on `metric`" over paired seeds."""
    a = np.asarray(method_values, dtype=float)
    b = np.asarray(baseline_values, dtype=float)
    if a.shape != b.shape or a.size != len(seeds):
        raise ValueError(f"claim '{statement}': need one value per seed for both methods")
    diff = a - b
    sign = 1.0 if direction == "greater" else -1.0
    p_value, statistic = _p_value(sign * diff, test)
    wins = int(np.sum(sign * diff > 0))
    return {
        "statement": statement,
        "metric": metric,
        "methods": [method, baseline],
        "direction": direction,
        "seeds": list(seeds),
        "per_seed": {method: a.tolist(), baseline: b.tolist()},
        "mean_difference": float(diff.mean()),
        "std_difference": float(diff.std(ddof=1)) if diff.size > 1 else 0.0,
        "wins": f"{wins}/{diff.size}",
        "test": test,
        "statistic": statistic,
        "p_value": p_value,
        "alpha": alpha,
        "holds": bool(sign * diff.mean() > 0 and p_value < alpha),
    }


def _p_value(diff: np.ndarray, test: Test) -> tuple[float, float]:
    """One-sided p-value that the paired differences are positive, and the test statistic."""
    if test == "sign":
        nonzero = diff[diff != 0]
        wins = int(np.sum(nonzero > 0))
        if nonzero.size == 0:
            return 1.0, 0.0
        return float(stats.binomtest(wins, nonzero.size, 0.5, alternative="greater").pvalue), float(
            wins
        )
    if diff.size < 2:
        return 1.0, float("nan")
    if np.all(diff == diff[0]):  # zero variance: the t statistic is undefined
        return (0.0 if diff[0] > 0 else 1.0), float("nan")
    result = stats.ttest_rel(diff, np.zeros_like(diff), alternative="greater")
    return float(result.pvalue), float(result.statistic)


def claims_document(study: str, checks: list[dict[str, Any]], notes: str) -> dict[str, Any]:
    """The claims.json document: the study id, a note on the pass rule, and the checks."""
    return {"study": study, "notes": notes, "claims": checks}
