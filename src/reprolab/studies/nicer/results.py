"""The nicer table, claim checks and study metrics, from the per-seed metrics files.

Table: rows = the condensers and the full bags; columns = balanced accuracy and AUC of the
classifier on the test slides, prototypes per slide (mean over slides, and their spread across
slides), MMD² of the test slides' condensed sets to their tiles, condensation cost (thousands
of distance or kernel evaluations per slide) and training cost (instances per epoch, % of the
full bags'), all at the table's budget. A column that does not apply to a row is "—".

"The best prior condenser" is the strongest of `prior` (random tiles, k-means, the GMM
prototype learner, kernel herding) by mean over the table's seeds on the metric at hand, so
every comparison is with the hardest rival. Every rule and threshold is in `nicer.claims`,
fixed before the evaluation seeds were run:
1. NICER beats the best prior condenser at the same average budget (`paired`, one-sided paired
   t-test, Holm): balanced accuracy, NICER − best prior > `claims.min_effect`.
2. NICER's condensed sets are closer to the slides' tile distributions (`paired`, direction
   less): mean MMD² over the test slides, NICER − the prior with the lowest.
3. NICER's accuracy-per-cost curve dominates (`bound`): at every budget of `budgets` the mean
   balanced accuracy of NICER minus the best prior's at that budget is at least
   −`claims.budget_margin`.
4. Capacity follows heterogeneity (`bound`): Spearman's ρ between NICER's prototypes per
   slide and the slide's number of tissue types is at least `claims.min_rho`, on every seed
   (one measurement when the capacities do not depend on the seed, as at smoke scale; a real
   cohort has no tissue-type count: the check has no value there and fails).
5. Sanity (never counted): every condensed set's weights sum to one, and DP-means' capacity
   averages at most the budget (λ is calibrated to it).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from reprolab.core.claims import bound_check, paired_check, sanity_check
from reprolab.core.io import read_json
from reprolab.core.summary import Table
from reprolab.core.tables import Record, curve_frame, seed_stats

NAMES = {
    "random": "random tiles",
    "kmeans": "k-means",
    "gmm": "GMM prototypes (PANTHER-lite)",
    "herding": "kernel herding",
    "kmeans_dm": "k-means + matching",
    "dpmeans": "DP-means (no matching)",
    "nicer": "NICER (DP-means + matching)",
    "full": "full bags",
}
COLUMNS = {
    "balanced_accuracy": "balanced accuracy",
    "auc": "AUC",
    "prototypes_mean": "prototypes / slide",
    "prototypes_std": "prototypes, std across slides",
    "mmd2_test": "MMD² to the slide",
    "operations": "condensation evals / slide (K)",
    "training_cost": "training cost vs full bags (%)",
}
NOTES = __doc__.split("\n\n", 2)[2]
WEIGHT_TOLERANCE = 1e-5


def load_runs(params: dict[str, Any], seeds: Sequence[int], runs_dir: Path) -> list[dict]:
    """The metrics.json of every seed, in seed order."""
    return [read_json(Path(runs_dir) / f"seed{s}" / "metrics.json") for s in seeds]


def entry(run: dict, row: str, budget: int) -> dict | None:
    """One row's result of a seed at `budget` (the full bags at any budget); None if absent."""
    results = run["rows"].get(row, {})
    return results.get("full") if row == "full" else results.get(str(budget))


def values(runs: list[dict], row: str, budget: int, key: str) -> np.ndarray:
    """One value per seed of `key` (NaN where the row did not run or has no such value)."""
    out = []
    for run in runs:
        found = entry(run, row, budget)
        if found is None:
            out.append(np.nan)
        elif key == "training_cost":
            full = entry(run, "full", budget)
            cost = found["instances_per_epoch"] / full["instances_per_epoch"] if full else np.nan
            out.append(100.0 * cost)
        elif key == "operations":
            out.append(found["operations_per_slide"] / 1e3 if row != "full" else np.nan)
        elif key in ("prototypes_mean", "prototypes_std") and row == "full":
            tiles = np.asarray(run["tiles"], dtype=float)
            out.append(tiles.mean() if key == "prototypes_mean" else tiles.std())
        else:
            out.append(float(found.get(key, np.nan)))
    return np.array(out, dtype=float)


def table(params: dict[str, Any], runs: list[dict], seeds: Sequence[int]) -> Table:
    """Rows = `params["rows"]`; columns = COLUMNS, at the table's budget."""
    budget = int(params["budget"])
    out, absent = [], set()
    for row in params["rows"]:
        for key, column in COLUMNS.items():
            per_seed = values(runs, row, budget, key)
            if np.isnan(per_seed).all():
                absent.add((NAMES[row], column))
                continue
            out += [
                Record(NAMES[row], column, s, float(v))
                for s, v in zip(seeds, per_seed, strict=True)
            ]
    return Table(
        out,
        [NAMES[r] for r in params["rows"]],
        list(COLUMNS.values()),
        f"Slide condensation at an average budget of {budget} prototypes per slide: the "
        "classifier's balanced accuracy and AUC, prototypes per slide, MMD² to the slide and "
        "costs, mean ± std over seeds.",
        frozenset(absent),
    )


def strongest(
    params: dict[str, Any], runs: list[dict], budget: int, key: str, goal: str = "max"
) -> str:
    """The prior condenser with the best mean `key` at `budget` (the first of equals)."""
    ran = [r for r in params["prior"] if not np.isnan(values(runs, r, budget, key)).any()]
    if not ran:
        raise ValueError(f"nicer: no prior condenser ran at budget {budget}")
    sign = 1.0 if goal == "max" else -1.0
    return max(ran, key=lambda r: sign * float(values(runs, r, budget, key).mean()))


def capacity_rho(runs: list[dict], budget: int) -> dict[str, float]:
    """Per seed Spearman's ρ of NICER's prototypes per slide against tissue types; one value
    when every seed gave the same (farthest-first DP-means with λ from every slide and
    deterministic matching give each slide the same capacity on every seed)."""
    from scipy.stats import spearmanr

    out = {}
    for run in runs:
        sizes = entry(run, "nicer", budget)["prototypes"]
        types = [np.nan if h is None else h for h in run["heterogeneity"]]
        known = ~np.isnan(types)
        rho = (
            float(spearmanr(np.asarray(sizes)[known], np.asarray(types)[known]).statistic)
            if known.sum() > 2
            else float("nan")
        )
        out[f"seed {run['seed']}"] = rho
    if len(set(out.values())) == 1 and len(out) > 1:  # NICER's capacity ignores the seed
        return {"every seed (the same capacities)": next(iter(out.values()))}
    return out


def budget_margins(params: dict[str, Any], runs: list[dict]) -> dict[str, float]:
    """Per budget: mean balanced accuracy of NICER minus the best prior's at that budget."""
    out = {}
    for budget in params["budgets"]:
        rival = strongest(params, runs, int(budget), "balanced_accuracy")
        ours = values(runs, "nicer", int(budget), "balanced_accuracy").mean()
        theirs = values(runs, rival, int(budget), "balanced_accuracy").mean()
        out[f"B={budget} vs {NAMES[rival]}"] = float(ours - theirs)
    return out


def against(
    statement: str,
    key: str,
    rival: str,
    runs: list[dict],
    seeds: Sequence[int],
    budget: int,
    **rule: Any,
) -> dict:
    """The paired check of NICER's `key` against `rival`'s at `budget` (rule: direction,
    alpha, min_effect)."""
    return paired_check(
        statement,
        COLUMNS[key],
        "nicer",
        rival,
        values(runs, "nicer", budget, key),
        values(runs, rival, budget, key),
        seeds,
        **rule,
    )


def claim_checks(params: dict[str, Any], runs: list[dict], seeds: Sequence[int]) -> list[dict]:
    """Claims 1-4 of the module docstring, then the sanity checks (5)."""
    rules, budget = params["claims"], int(params["budget"])
    alpha, min_effect = float(rules["alpha"]), float(rules["min_effect"])
    accuracy_rival = strongest(params, runs, budget, "balanced_accuracy")
    mmd_rival = strongest(params, runs, budget, "mmd2_test", goal="min")
    return [
        against(
            f"NICER beats prior condensation methods at the same average budget "
            f"({NAMES[accuracy_rival]}, the strongest; the abstract: +7.44 % on average).",
            "balanced_accuracy",
            accuracy_rival,
            runs,
            seeds,
            budget,
            alpha=alpha,
            min_effect=min_effect,
        ),
        against(
            f"NICER's condensed sets match the slides' feature distributions more closely "
            f"(lower MMD² than {NAMES[mmd_rival]}, the closest prior condenser).",
            "mmd2_test",
            mmd_rival,
            runs,
            seeds,
            budget,
            direction="less",
            alpha=alpha,
        ),
        bound_check(
            "NICER's accuracy-per-cost curve dominates the prior condensers' across budgets.",
            "balanced accuracy, NICER minus the best prior condenser at each budget (mean "
            "over seeds)",
            budget_margins(params, runs),
            "at_least",
            -float(rules["budget_margin"]),
        ),
        bound_check(
            "NICER's capacity per slide follows the slide's heterogeneity.",
            "Spearman ρ of NICER's prototypes per slide against its tissue types",
            capacity_rho(runs, budget),
            "at_least",
            float(rules["min_rho"]),
        ),
        *sanity_checks(params, runs),
    ]


def sanity_checks(params: dict[str, Any], runs: list[dict]) -> list[dict]:
    """Weights on the simplex everywhere; DP-means' mean capacity within the budget."""
    off = [
        f"seed {run['seed']} {row} B={b}"
        for run in runs
        for row, results in run["rows"].items()
        for b, result in results.items()
        if row != "full" and result["weights_sum_error"] > WEIGHT_TOLERANCE
    ]
    over = [
        f"seed {run['seed']} B={b}: {result['prototypes_mean']:.2f}"
        for run in runs
        for b, result in run["rows"].get("dpmeans", {}).items()
        if result["prototypes_mean"] > float(b) + 1e-9
    ]
    return [
        sanity_check(
            "Every condensed set's weights sum to one.",
            "|Σ w − 1| of every condensed slide",
            f"at most {WEIGHT_TOLERANCE:g} for every row, budget and seed",
            not off,
            {"off": off} if off else None,
        ),
        sanity_check(
            "DP-means' capacity averages at most the budget it was calibrated to.",
            "mean prototypes per slide of dpmeans",
            "at most the budget, every budget and seed",
            not over,
            {"over": over} if over else None,
        ),
    ]


def study_metrics(params: dict[str, Any], runs: list[dict], seeds: Sequence[int]) -> dict[str, Any]:
    """Per row and budget each column's seed statistics; NICER's capacity per slide (first
    seed) with the slides' heterogeneity; λ per budget."""
    metrics: dict[str, Any] = {"seeds": list(seeds), "rows": {}}
    for row in params["rows"]:
        budgets = ["full"] if row == "full" else [str(b) for b in params["budgets"]]
        metrics["rows"][row] = {
            b: {
                key: seed_stats(
                    values(runs, row, int(params["budget"]) if b == "full" else int(b), key)
                )
                for key in COLUMNS
            }
            for b in budgets
            if row == "full" or not np.isnan(values(runs, row, int(b), "auc")).all()
        }
    budget = int(params["budget"])
    metrics["capacity"] = {
        "budget": budget,
        "prototypes": entry(runs[0], "nicer", budget)["prototypes"],
        "heterogeneity": runs[0]["heterogeneity"],
        "rho": capacity_rho(runs, budget),
    }
    metrics["lambda"] = runs[0]["lambda"]
    return metrics


def curve_rows(params: dict[str, Any], runs: list[dict], seeds: Sequence[int]) -> pd.DataFrame:
    """Seed means of balanced accuracy against the budget (x), series `<row>_bacc`."""
    points = []
    for row in params["rows"]:
        for budget in params["budgets"]:
            mean = values(runs, row, int(budget), "balanced_accuracy").mean()
            points.append((f"{row}_bacc", float(budget), float(mean)))
    return curve_frame(points)
