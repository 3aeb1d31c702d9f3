"""Hyperparameter tuning on tuning seeds: the grid, the selection, the record a run job reads.

Every study tunes inside the workflow (a `<id>_tune` rule): for each method a grid of values
(params `<id>.tune.grid.<method>`), each point trained and scored on the tuning seeds
(params `tuning_seeds`, disjoint from `seeds`, so no table ever shows a tuning run), the point
with the best mean score selected. The record written per method (`write_tuning`) keeps every
trial, so the report can draw the tuning curve and a reader can see whether the winner sits on
the edge of its grid (then the grid is too narrow: widen it, never trust the value).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from reprolab.core.io import read_json, write_json
from reprolab.core.progress import progress

Goal = Literal["max", "min"]
FORMAT = "reprolab.tuning/1"
"""The `format` key of a tuning record: what `read_tuning` accepts."""


def grid_points(grid: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """Every combination of the grid's values, in the grid's key order (the first key varies
    slowest); an empty grid has one point, the method's defaults."""
    for name, values in grid.items():
        if not isinstance(values, Sequence) or isinstance(values, str) or not values:
            raise ValueError(f"tuning grid '{name}': expected a non-empty list, got {values!r}")
    names = list(grid)
    return [dict(zip(names, combo, strict=True)) for combo in itertools.product(*grid.values())]


def check_equal_grids(
    grids: Mapping[str, Mapping[str, Sequence[Any]]], methods: Sequence[str], key: str
) -> None:
    """Require a grid for every one of `methods` and the same number of points in each (the
    same tuning budget for every method); `key` names the grids' place in params.yaml (say
    `ssg.tune.grid`) in the ValueError."""
    missing = [m for m in methods if m not in grids]
    if missing:
        raise ValueError(f"{key}: no grid for method(s) {missing}")
    sizes = {m: len(grid_points(grids[m])) for m in methods}
    if len(set(sizes.values())) > 1:
        raise ValueError(
            f"{key}: every method needs the same number of grid points (the same tuning "
            f"budget), got {sizes}"
        )


def on_edge(
    grid: Mapping[str, Sequence[Any]],
    selected: Mapping[str, Any],
    limits: Mapping[str, tuple[float, float]] | None = None,
) -> list[str]:
    """Names of the numeric grid axes (two values or more) whose selected value is the axis's
    smallest or largest: a better value may lie outside the grid. Categorical axes (strings,
    booleans) have no edge, and neither has a lower end at 0: the grids tune non-negative
    quantities (rates, loss weights), so nothing lies below 0 and a winner there (the term
    switched off) is a result, not a grid too narrow. For the same reason an end that is a limit
    of the axis's domain (`limits`: axis -> (lowest, highest), e.g. MMR's λ in [0, 1]) is no
    edge."""
    edges = []
    for name, values in grid.items():
        numeric = all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)
        if not numeric or len(values) < 2:
            continue
        ends = {max(values)} | ({min(values)} if min(values) != 0 else set())
        ends -= set((limits or {}).get(name, ()))
        if selected[name] in ends:
            edges.append(name)
    return edges


def _mean(values: Sequence[float]) -> float:
    """Mean of finite scores; NaN when any seed failed (a diverged trial never wins)."""
    if not values or not all(math.isfinite(v) for v in values):
        return math.nan
    return float(sum(values) / len(values))


def is_flat(trials: Sequence[Mapping[str, Any]]) -> bool:
    """Whether the score does not depend on the grid: the spread of the points' mean scores
    (max − min over the finite ones) is at most twice the tuning seeds' noise, the mean over
    points of the standard error of a point's mean. Then which point wins is noise and a winner
    on an edge says nothing about the grid's width. Needs two tuning seeds or more (with one
    there is no noise estimate: never flat)."""
    finite = [t for t in trials if math.isfinite(t["score"])]
    if len(finite) < 2 or min(len(t["per_seed"]) for t in finite) < 2:
        return False
    errors = []
    for t in finite:
        n = len(t["per_seed"])
        variance = sum((v - t["score"]) ** 2 for v in t["per_seed"]) / (n - 1)
        errors.append(math.sqrt(variance / n))
    spread = max(t["score"] for t in finite) - min(t["score"] for t in finite)
    return spread <= 2.0 * sum(errors) / len(errors)


def tune(
    method: str,
    grid: Mapping[str, Sequence[Any]],
    evaluate: Callable[[dict[str, Any], int], float],
    seeds: Sequence[int],
    metric: str,
    goal: Goal,
    limits: Mapping[str, tuple[float, float]] | None = None,
) -> dict[str, Any]:
    """Score every grid point of `method` by `evaluate(values, seed)` on each tuning seed and
    select the best mean score (`goal`: "max" or "min"). Ties go to the earlier grid point; a
    point with a non-finite score on any seed is never selected. `limits` are the domains of
    bounded axes (`on_edge`), recorded when given. Returns the tuning record."""
    if goal not in ("max", "min"):
        raise ValueError(f"tuning {method}: goal must be 'max' or 'min', got {goal!r}")
    if not seeds:
        raise ValueError(f"tuning {method}: no tuning seeds")
    trials = []
    for values in progress(grid_points(grid), desc=f"tune {method}"):
        per_seed = [float(evaluate(dict(values), int(seed))) for seed in seeds]
        trials.append({"values": values, "per_seed": per_seed, "score": _mean(per_seed)})
    finite = [t for t in trials if math.isfinite(t["score"])]
    if not finite:
        raise RuntimeError(f"tuning {method}: every grid point failed on some tuning seed")
    sign = 1.0 if goal == "max" else -1.0
    best = max(finite, key=lambda t: sign * t["score"])  # max keeps the first of equals
    return {
        "format": FORMAT,
        "method": method,
        "metric": metric,
        "goal": goal,
        "tuning_seeds": [int(s) for s in seeds],
        "grid": {name: list(values) for name, values in grid.items()},
        "trials": trials,
        "selected": dict(best["values"]),
        "score": best["score"],
        "on_edge": on_edge(grid, best["values"], limits),
        "flat": is_flat(trials),
        **({"limits": {name: list(ends) for name, ends in limits.items()}} if limits else {}),
    }


def write_tuning(path: str | Path, record: Mapping[str, Any]) -> None:
    """Write a tuning record (atomically, as every JSON of the project)."""
    write_json(path, dict(record))


def outcome_line(record: Mapping[str, Any], seconds: float) -> str:
    """One line for a tuning job's log: what was tried, how long it took, what was selected,
    and a loud warning when the winner sits on the grid's edge."""
    points = len(record["trials"])
    edge = f"; ON THE GRID'S EDGE: {record['on_edge']}" if record["on_edge"] else ""
    return (
        f"{record['method']}: {points} grid points x {len(record['tuning_seeds'])} seeds in "
        f"{seconds:.1f} s; selected {record['selected']} (score {record['score']:.4f}){edge}"
    )


def read_tuning(path: str | Path) -> dict[str, Any]:
    """A tuning record written by `write_tuning`; a file of another format is an error that
    names it."""
    record = read_json(path)
    if not isinstance(record, dict) or record.get("format") != FORMAT:
        raise ValueError(f"{path}: not a tuning record (expected format {FORMAT!r})")
    return record


def selected(paths: Iterable[str | Path]) -> dict[str, dict[str, Any]]:
    """{method: selected values} from tuning records: what a run job applies."""
    out: dict[str, dict[str, Any]] = {}
    for path in paths:
        record = read_tuning(path)
        if record["method"] in out:
            raise ValueError(f"{path}: a second tuning record of method {record['method']!r}")
        out[record["method"]] = record["selected"]
    return out


def tuning_summary(paths: Iterable[str | Path]) -> dict[str, dict[str, Any]]:
    """metrics.json's `tuning` entry: per method the selected values, their mean score on the
    tuning seeds, the metric and goal, the grid size, the axes whose winner is on an edge and
    whether the curve is flat within the tuning seeds' noise (`is_flat`)."""
    out = {}
    for path in paths:
        record = read_tuning(path)
        out[record["method"]] = {
            "selected": record["selected"],
            "score": record["score"],
            "metric": record["metric"],
            "goal": record["goal"],
            "grid_points": len(record["trials"]),
            "tuning_seeds": record["tuning_seeds"],
            "on_edge": record["on_edge"],
            "flat": record["flat"],
            "trials": [{"values": t["values"], "score": t["score"]} for t in record["trials"]],
        }
    return out


def _point_label(values: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in values.items()) or "defaults"


def plot_tuning(summary: Mapping[str, Mapping[str, Any]]) -> Any:
    """The tuning curves of a study (metrics.json's `tuning` entry, see `tuning_summary`): one
    panel per method, its mean score on the tuning seeds per grid point, the selected point
    marked and an axis whose winner sits on the grid's edge named in the title."""
    import matplotlib.pyplot as plt

    methods = list(summary)
    columns = min(3, len(methods))
    rows = -(-len(methods) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(4.6 * columns, 3.4 * rows), squeeze=False)
    for ax, method in zip(axes.flat, methods, strict=False):
        entry = summary[method]
        labels = [_point_label(t["values"]) for t in entry["trials"]]
        scores = [t["score"] for t in entry["trials"]]
        chosen = [t["values"] == entry["selected"] for t in entry["trials"]]
        ax.plot(range(len(scores)), scores, marker="o", color="tab:blue")
        ax.scatter(
            [i for i, c in enumerate(chosen) if c],
            [s for s, c in zip(scores, chosen, strict=True) if c],
            s=120,
            facecolors="none",
            edgecolors="tab:red",
            linewidths=2,
            label="selected",
        )
        edge = f" — on edge: {', '.join(entry['on_edge'])}" if entry["on_edge"] else ""
        edge += " (flat within seed noise)" if entry["flat"] else ""
        ax.set_title(f"{method}{edge}", fontsize=9)
        ax.set_xticks(range(len(labels)), labels, rotation=60, ha="right", fontsize=7)
        ax.set_ylabel(f"{entry['metric']} ({entry['goal']})", fontsize=8)
    for ax in list(axes.flat)[len(methods) :]:
        ax.set_visible(False)
    fig.tight_layout()
    return fig
