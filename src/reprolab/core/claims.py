"""Claim checks: each checkable sentence of a paper's abstract, tested by a rule fixed in advance.

A check has one of five kinds, and states its rule as data (`rule`) beside a sentence that
says the same (`rule["text"]`):

- `paired`: the method against a baseline over seeds, a one-sided test: seed by seed (same
  seed = same data and initial draw) a paired t-test or sign test, or, where the two samples
  come from different datasets that a seed index does not pair, Welch's unpaired t-test
  (test `welch`). The rule names the direction, the margin the method may trail by, the
  minimum effect and alpha. Within a study the p-values of all paired
  checks get Holm's family-wise correction (`claims_document` applies it): `holds` uses the
  adjusted p-value, the raw one stays beside it.
- `count`: counts of events (diverged runs, wins) against at-most / at-least limits.
- `tolerance`: measured values within ± tolerance of a target.
- `bound`: measured values on the right side of a bound (at most / at least).
- `sanity`: true by construction (an analytic inequality, an oracle's exactness). Shown, so a
  broken pipeline is seen, but never counted in `claims_holding`.

A check whose outcome flips in another run (kernel level, processor vendor) is marked `fragile`
and never counts as holding (reprolab.core.fragility); `claims_document` applies the marking last.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

import numpy as np
from scipy import stats

from reprolab.core.fragility import mark_fragile

Direction = Literal["greater", "less"]
Test = Literal["paired_t", "sign", "welch"]
Comparison = Literal["at_most", "at_least"]

KINDS = ("paired", "count", "tolerance", "bound", "sanity")
CONFIDENCE = 0.95
"""Level of the interval reported around a paired check's mean difference."""


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
    margin: float = 0.0,
    min_effect: float = 0.0,
) -> dict[str, Any]:
    """Test "`method` is `direction` than `baseline` on `metric`" over paired seeds.

    With a `margin` m the claim is "within m of the baseline": the test runs on the difference
    shifted by m in the method's favour. The check holds when the shifted mean difference
    exceeds `min_effect` in the claimed direction and the p-value (Holm-adjusted once the
    study's checks are gathered) is below `alpha`. A seed without a finite value makes the
    check fail with a note: a run that diverged has nothing to compare.
    """
    a = np.asarray(method_values, dtype=float)
    b = np.asarray(baseline_values, dtype=float)
    if a.shape != b.shape or a.size != len(seeds):
        raise ValueError(f"claim '{statement}': need one value per seed for both methods")
    rule = {
        "direction": direction,
        "test": test,
        "alpha": alpha,
        "margin": margin,
        "min_effect": min_effect,
        "correction": "holm",
    }
    check = {
        "kind": "paired",
        "statement": statement,
        "metric": metric,
        "methods": [method, baseline],
        "seeds": list(seeds),
        "per_seed": {method: a.tolist(), baseline: b.tolist()},
        "test": test,
        "rule": {**rule, "text": _paired_rule_text(rule, method, baseline)},
    }
    diff = a - b
    if not np.all(np.isfinite(diff)):
        missing = [s for s, d in zip(seeds, diff, strict=True) if not np.isfinite(d)]
        return {
            **check,
            "mean_difference": None,
            "std_difference": None,
            "wins": f"0/{diff.size}",
            "statistic": None,
            "p_value": None,
            "p_adjusted": None,
            "effect_size": None,
            "note": f"no finite value on seed(s) {missing}",
            "holds_unadjusted": False,
            "holds": False,
        }
    sign = 1.0 if direction == "greater" else -1.0
    if test == "welch":
        return {**check, **_welch(a, b, sign, margin, min_effect, alpha)}
    shifted = sign * diff + margin
    p_value, statistic = _p_value(shifted, test)
    effect = effect_size(diff)
    holds = bool(shifted.mean() > min_effect and p_value < alpha)
    return {
        **check,
        "mean_difference": float(diff.mean()),
        "std_difference": float(diff.std(ddof=1)) if diff.size > 1 else 0.0,
        "wins": f"{int(np.sum(shifted > 0))}/{diff.size}",
        "statistic": statistic,
        "p_value": p_value,
        "p_adjusted": p_value,
        "effect_size": effect,
        "holds_unadjusted": holds,
        "holds": holds,
    }


def _welch(
    a: np.ndarray, b: np.ndarray, sign: float, margin: float, min_effect: float, alpha: float
) -> dict[str, Any]:
    """The outcome of an unpaired comparison: Welch's one-sided t-test on the difference of
    means (shifted by the margin), its Welch–Satterthwaite interval, and wins counted over every
    (method, baseline) pair of values, since no seed pairs them."""
    n, m = a.size, b.size
    mean = float(a.mean() - b.mean())
    var_a, var_b = (float(x.var(ddof=1)) if x.size > 1 else 0.0 for x in (a, b))
    se = float(np.sqrt(var_a / n + var_b / m))
    shifted_mean = sign * mean + margin
    if n < 2 or m < 2 or se == 0:
        p_value, statistic, low, high = (0.0 if shifted_mean > 0 else 1.0), None, mean, mean
    else:
        result = stats.ttest_ind(
            sign * a + margin, sign * b, equal_var=False, alternative="greater"
        )
        p_value, statistic = float(result.pvalue), float(result.statistic)
        df = (var_a / n + var_b / m) ** 2 / (
            (var_a / n) ** 2 / (n - 1) + (var_b / m) ** 2 / (m - 1)
        )
        half = float(stats.t.ppf(0.5 + CONFIDENCE / 2, df) * se)
        low, high = mean - half, mean + half
    wins = int(np.sum(sign * (a[:, None] - b[None, :]) + margin > 0))
    holds = bool(shifted_mean > min_effect and p_value < alpha)
    return {
        "mean_difference": mean,
        "std_difference": float(np.sqrt(var_a + var_b)),
        "wins": f"{wins}/{n * m}",
        "statistic": statistic,
        "p_value": p_value,
        "p_adjusted": p_value,
        "effect_size": {
            "measure": "difference of means (unpaired)",
            "value": mean,
            "ci_low": low,
            "ci_high": high,
            "confidence": CONFIDENCE,
            "cohens_dz": None,
        },
        "holds_unadjusted": holds,
        "holds": holds,
    }


def _paired_rule_text(rule: Mapping[str, Any], method: str, baseline: str) -> str:
    """The paired rule in one sentence, e.g. "mean of pem − (nsm − 3) > 0 over seeds:
    one-sided paired t-test, Holm-adjusted p < 0.05"."""
    greater = rule["direction"] == "greater"
    shift = f" {'−' if greater else '+'} {rule['margin']:g}" if rule["margin"] else ""
    reference = f"({baseline}{shift})" if shift else baseline
    difference = f"{method} − {reference}" if greater else f"{reference} − {method}"
    if rule["test"] == "welch":
        first, second = (method, reference) if greater else (reference, method)
        return (
            f"mean of {first} − mean of {second} > {rule['min_effect']:g} (unpaired: the seeds "
            f"index different datasets): one-sided Welch t-test, Holm-adjusted "
            f"p < {rule['alpha']:g}"
        )
    test = "paired t-test" if rule["test"] == "paired_t" else "sign test"
    return (
        f"mean of {difference} > {rule['min_effect']:g} over seeds: one-sided {test}, "
        f"Holm-adjusted p < {rule['alpha']:g}"
    )


def effect_size(diff: np.ndarray) -> dict[str, Any]:
    """The mean paired difference with its t interval, and Cohen's d_z (mean / sd of the
    differences; undefined when they do not vary)."""
    n = diff.size
    mean = float(diff.mean())
    sd = float(diff.std(ddof=1)) if n > 1 else 0.0
    if n > 1 and sd > 0:
        half = float(stats.t.ppf(0.5 + CONFIDENCE / 2, n - 1) * sd / np.sqrt(n))
        low, high, dz = mean - half, mean + half, mean / sd
    else:
        low, high, dz = mean, mean, None
    return {
        "measure": "mean difference",
        "value": mean,
        "ci_low": low,
        "ci_high": high,
        "confidence": CONFIDENCE,
        "cohens_dz": dz,
    }


def _p_value(diff: np.ndarray, test: Test) -> tuple[float, float | None]:
    """One-sided p-value that the paired differences are positive, and the test statistic."""
    if test == "sign":
        nonzero = diff[diff != 0]
        wins = int(np.sum(nonzero > 0))
        if nonzero.size == 0:
            return 1.0, 0.0
        p = stats.binomtest(wins, nonzero.size, 0.5, alternative="greater").pvalue
        return float(p), float(wins)
    if diff.size < 2:
        return 1.0, None
    if np.all(diff == diff[0]):  # zero variance: the t statistic is undefined
        return (0.0 if diff[0] > 0 else 1.0), None
    result = stats.ttest_rel(diff, np.zeros_like(diff), alternative="greater")
    return float(result.pvalue), float(result.statistic)


def count_check(
    statement: str,
    metric: str,
    counts: Mapping[str, int],
    limits: Mapping[str, tuple[Comparison, int]],
    details: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A claim decided by counting: holds when every named count is within its limit.

    `limits` maps a count name to ("at_most" | "at_least", n); each must be in `counts`.
    """
    missing = sorted(set(limits) - set(counts))
    if missing:
        raise ValueError(f"claim '{statement}': no count for limit(s) {missing}")
    rule = {name: {comparison: n} for name, (comparison, n) in limits.items()}
    text = "; ".join(
        f"{name} {_SYMBOL[comparison]} {n}" for name, (comparison, n) in limits.items()
    )
    holds = all(_within(counts[name], comparison, n) for name, (comparison, n) in limits.items())
    return {
        "kind": "count",
        "statement": statement,
        "metric": metric,
        "counts": {name: int(value) for name, value in counts.items()},
        "rule": {"limits": rule, "text": text},
        **({"details": dict(details)} if details else {}),
        "holds": bool(holds),
    }


def tolerance_check(
    statement: str,
    metric: str,
    values: Mapping[str, float],
    target: float,
    tolerance: float,
    details: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A claim that every measured value lies within ± `tolerance` of `target`."""
    holds = all(np.isfinite(v) and abs(v - target) <= tolerance for v in values.values())
    return {
        "kind": "tolerance",
        "statement": statement,
        "metric": metric,
        "values": {name: float(v) for name, v in values.items()},
        "rule": {
            "target": target,
            "tolerance": tolerance,
            "text": f"every value within {target:g} ± {tolerance:g}",
        },
        **({"details": dict(details)} if details else {}),
        "holds": bool(holds),
    }


def bound_check(
    statement: str,
    metric: str,
    values: Mapping[str, float],
    comparison: Comparison,
    bound: float,
    details: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A claim that every measured value is at most (or at least) `bound`."""
    holds = all(np.isfinite(v) and _within(v, comparison, bound) for v in values.values())
    return {
        "kind": "bound",
        "statement": statement,
        "metric": metric,
        "values": {name: float(v) for name, v in values.items()},
        "rule": {
            comparison: bound,
            "text": f"every value {_SYMBOL[comparison]} {bound:g}",
        },
        **({"details": dict(details)} if details else {}),
        "holds": bool(holds),
    }


def sanity_check(
    statement: str,
    metric: str,
    rule: str,
    holds: bool,
    details: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A check that is true by construction when the code is right: shown, never counted."""
    return {
        "kind": "sanity",
        "statement": statement,
        "metric": metric,
        "rule": {"text": rule},
        **({"details": dict(details)} if details else {}),
        "holds": bool(holds),
    }


_SYMBOL = {"at_most": "≤", "at_least": "≥"}


def _within(value: float, comparison: Comparison, limit: float) -> bool:
    return value <= limit if comparison == "at_most" else value >= limit


def holm_adjust(checks: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The checks with Holm-adjusted p-values on the paired ones, and `holds` re-decided.

    The family is every paired check of the study; a check without a p-value (a seed with no
    finite value) counts in the family size with p = 1. Adjusted p-values are made monotone
    in the order of the raw ones and capped at 1.
    """
    out = [dict(check) for check in checks]
    paired = [c for c in out if c["kind"] == "paired"]
    raw = [1.0 if c["p_value"] is None else c["p_value"] for c in paired]
    m = len(paired)
    running = 0.0
    for rank, index in enumerate(np.argsort(raw, kind="stable")):
        running = max(running, min(1.0, (m - rank) * raw[index]))
        check = paired[index]
        if check["p_value"] is None:
            continue
        check["p_adjusted"] = running
        check["holds"] = bool(check["holds_unadjusted"] and running < check["rule"]["alpha"])
    return out


def counted(checks: Sequence[dict[str, Any]]) -> tuple[int, int]:
    """(holding, counted): the checks that count toward a study's score, sanity ones aside."""
    scored = [c for c in checks if c["kind"] != "sanity"]
    return sum(bool(c["holds"]) for c in scored), len(scored)


def claims_document(
    study: str,
    checks: list[dict[str, Any]],
    notes: str,
    fragility: Mapping[str, Any] | None = None,
    digest: str = "",
) -> dict[str, Any]:
    """The claims.json document: the checks with Holm's correction applied, then marked from the
    study's fragility record (None: no second-level run; `digest` identifies this run's params
    and seeds, see core.fragility), and the score."""
    for check in checks:
        if check.get("kind") not in KINDS:
            raise ValueError(
                f"{study}: claim '{check.get('statement')}' has kind {check.get('kind')!r}, "
                f"expected one of {KINDS}"
            )
    marked, status = mark_fragile(holm_adjust(checks), fragility, digest)
    holding, total = counted(marked)
    return {
        "study": study,
        "notes": notes,
        "correction": "holm",
        "fragility": status,
        "claims_holding": holding,
        "claims_counted": total,
        "claims": marked,
    }
