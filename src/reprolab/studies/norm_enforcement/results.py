"""The norm_enforcement table, claim checks, study metrics and curves, from the run files.

Table: rows = environment × mechanism (workflow_io.row_name), columns = metrics.COLUMNS, mean ±
std over seeds, with the main population. The population sweep (metrics.json `populations`)
is the report's second table.

Claims (rules in `norm_enforcement.claims`, fixed before the tuned runs; one-sided paired
t-tests over seeds, each seed's value the mean over the environments, Holm-adjusted within the
study; core.claims):
1-3. Each simple mechanism (FixedFine, ReportSanction, WindowRep) is exploited: under it the
     non-compliant agents earn more per round (net of fines) than the compliant ones.
4.   Exploitation is learned, including false reports: under ReportSanction the non-compliant
     agents file more false reports per round in the episode's last quarter than in its first.
5-8. The robust mechanism resists exploitation: under it the non-compliant agents earn less
     than the compliant ones, with the main population and with each population of the sweep.
9.   At a comparable violation rate: Robust's violation rate is at most `violation_margin`
     above that of the strongest simple mechanism (the lowest mean violation rate) …
10.  … at a comparable or lower cost: its enforcement cost at most `cost_margin` above it.
11-12. Each ablation loses part of the robustness: Robust's exploitation gain is below the
     ablation's.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from reprolab.core.claims import paired_check
from reprolab.core.io import read_json
from reprolab.core.summary import Table
from reprolab.core.tables import Record, curve_frame, seed_stats
from reprolab.studies.norm_enforcement.metrics import COLUMNS
from reprolab.studies.norm_enforcement.workflow_io import ABLATIONS, ROWS, SIMPLE, row_name

LABELS = {
    "violation_rate": "violation rate",
    "exploitation_gain": "exploitation gain",
    "false_sanction_rate": "false sanctions (compliant)",
    "compliant_suspended": "compliant suspended",
    "enforcement_cost": "enforcement cost",
    "welfare": "welfare",
    "false_report_share": "false-report share",
}
"""metrics.COLUMNS key → the table's column name."""
MAIN = "main population"
"""How the claims name the table's population."""


def load_runs(params: dict[str, Any], seeds: Sequence[int], runs_dir: Path) -> list[dict]:
    """The metrics.json of every seed, in seed order."""
    return [read_json(Path(runs_dir) / f"seed{s}" / "metrics.json") for s in seeds]


def per_seed(
    runs: list[dict], environment: str, mechanism: str, key: str, population: str | None = None
) -> np.ndarray:
    """One value per seed of `key` for `mechanism` in `environment` (the table's population,
    or the sweep's `population`)."""
    if population is None:
        return np.array([run["table"][environment][mechanism][key] for run in runs], dtype=float)
    return np.array(
        [run["populations"][population][environment][mechanism][key] for run in runs],
        dtype=float,
    )


def over_environments(
    params: dict[str, Any],
    runs: list[dict],
    mechanism: str,
    key: str,
    population: str | None = None,
) -> np.ndarray:
    """Per seed, the mean of `key` over the listed environments."""
    return np.mean(
        [per_seed(runs, e, mechanism, key, population) for e in params["environments"]], axis=0
    )


def table(params: dict[str, Any], runs: list[dict], seeds: Sequence[int]) -> Table:
    """Rows = environment × mechanism, columns = LABELS (every population has compliant
    agents, workflow_io.check_params, so every cell has a value)."""
    records, rows = [], []
    for environment in params["environments"]:
        for mechanism in params["methods"]:
            row = row_name(environment, mechanism)
            rows.append(row)
            for key in COLUMNS:
                values = per_seed(runs, environment, mechanism, key)
                records += [
                    Record(row, LABELS[key], s, float(v))
                    for s, v in zip(seeds, values, strict=True)
                ]
    return Table(
        records,
        rows,
        [LABELS[k] for k in COLUMNS],
        "Enforcement mechanisms in three environments (main population): per round, mean ± std "
        "over seeds; exploitation gain = non-compliant minus compliant agents' net payoff.",
    )


def strongest_simple(params: dict[str, Any], runs: list[dict]) -> str | None:
    """The listed simple mechanism with the lowest mean violation rate (the first of equals)."""
    simple = [m for m in SIMPLE if m in params["methods"]]
    if not simple:
        return None
    return min(
        simple, key=lambda m: float(over_environments(params, runs, m, "violation_rate").mean())
    )


def _check(
    params: dict[str, Any],
    seeds: Sequence[int],
    statement: str,
    metric: str,
    names: tuple[str, str],
    values: tuple[np.ndarray, np.ndarray],
    direction: str,
    margin: float = 0.0,
) -> dict[str, Any]:
    claims = params["claims"]
    return paired_check(
        statement,
        metric,
        names[0],
        names[1],
        values[0],
        values[1],
        seeds,
        direction=direction,  # type: ignore[arg-type]
        alpha=float(claims["alpha"]),
        margin=margin,
        min_effect=float(claims["min_effect"]),
    )


def _gain_check(
    params: dict[str, Any],
    runs: list[dict],
    seeds: Sequence[int],
    mechanism: str,
    direction: str,
    population: str | None = None,
) -> dict[str, Any]:
    """Non-compliant against compliant agents' net payoff under `mechanism`."""
    where = MAIN if population is None else f"population {population}"
    claimed = "more" if direction == "greater" else "less"
    return _check(
        params,
        seeds,
        f"Under {ROWS[mechanism]} ({where}) the non-compliant agents earn {claimed} than the "
        "compliant ones",
        "net payoff per agent and round, mean over environments",
        (f"non-compliant agents, {ROWS[mechanism]}", f"compliant agents, {ROWS[mechanism]}"),
        (
            over_environments(params, runs, mechanism, "other_payoff", population),
            over_environments(params, runs, mechanism, "compliant_payoff", population),
        ),
        direction,
    )


def claim_checks(params: dict[str, Any], runs: list[dict], seeds: Sequence[int]) -> list[dict]:
    """Claims 1-12 of the module docstring (those whose mechanisms are listed)."""
    methods = list(params["methods"])
    claims = params["claims"]
    checks = [_gain_check(params, runs, seeds, m, "greater") for m in SIMPLE if m in methods]
    if "report_sanction" in methods:
        checks.append(
            _check(
                params,
                seeds,
                "Under ReportSanction the non-compliant agents learn to file false reports "
                "(more per round in the last quarter than in the first)",
                "false reports per active round of the non-compliant agents",
                ("last quarter", "first quarter"),
                (
                    over_environments(params, runs, "report_sanction", "false_reports_last"),
                    over_environments(params, runs, "report_sanction", "false_reports_first"),
                ),
                "greater",
            )
        )
    checks.append(_gain_check(params, runs, seeds, "robust", "less"))
    checks += [
        _gain_check(params, runs, seeds, "robust", "less", name)
        for name in params["populations"]
        if "robust" in params["population_mechanisms"]
    ]
    rival = strongest_simple(params, runs)
    if rival is not None:
        for key, margin, wording in (
            ("violation_rate", "violation_margin", "violation rate"),
            ("enforcement_cost", "cost_margin", "enforcement cost"),
        ):
            limit = float(claims[margin])
            checks.append(
                _check(
                    params,
                    seeds,
                    f"Robust's {wording} is at most {limit:g} above that of the strongest "
                    f"simple mechanism ({ROWS[rival]}, the lowest violation rate)",
                    f"{wording} per round, mean over environments",
                    (ROWS["robust"], ROWS[rival]),
                    (
                        over_environments(params, runs, "robust", key),
                        over_environments(params, runs, rival, key),
                    ),
                    "less",
                    limit,
                )
            )
    for ablation in (a for a in ABLATIONS if a in methods):
        checks.append(
            _check(
                params,
                seeds,
                f"Removing a robust ingredient loses robustness: Robust's exploitation gain is "
                f"below that of {ROWS[ablation]}",
                "exploitation gain per round, mean over environments",
                (ROWS["robust"], ROWS[ablation]),
                (
                    over_environments(params, runs, "robust", "exploitation_gain"),
                    over_environments(params, runs, ablation, "exploitation_gain"),
                ),
                "less",
            )
        )
    return checks


def study_metrics(params: dict[str, Any], runs: list[dict], seeds: Sequence[int]) -> dict:
    """metrics.json: seed stats of every column per row, of the population sweep, and the fines
    each mechanism ran with (the tuned ones)."""
    scores = {
        row_name(e, m): {key: seed_stats(per_seed(runs, e, m, key)) for key in COLUMNS}
        for e in params["environments"]
        for m in params["methods"]
    }
    keys = (*COLUMNS, "other_payoff", "compliant_payoff")
    populations = {
        name: {
            row_name(e, m): {key: seed_stats(per_seed(runs, e, m, key, name)) for key in keys}
            for e in params["environments"]
            for m in params["population_mechanisms"]
        }
        for name in params["populations"]
    }
    return {
        "seeds": list(seeds),
        "scores": scores,
        "populations": populations,
        "fines": runs[0]["fines"] if runs else {},
        "strongest_simple": strongest_simple(params, runs),
    }


def curve_rows(params: dict[str, Any], runs: list[dict], seeds: Sequence[int]) -> pd.DataFrame:
    """curves.csv: per environment, mechanism and agent type (series `env/mechanism/type`) the
    mean cumulative net payoff per agent at the end of each window of rounds (x = the window's
    last round), mean over seeds."""
    rounds = int(params["rounds"])
    windows = int(params["report"]["windows"])
    ends = np.linspace(0, rounds, windows + 1).astype(int)[1:]
    points = []
    for environment in params["environments"]:
        for mechanism in params["methods"]:
            payoff = [run["trajectories"][environment][mechanism]["payoff"] for run in runs]
            for kind in payoff[0]:
                mean = np.mean([p[kind] for p in payoff], axis=0)
                series = f"{environment}/{mechanism}/{kind}"
                points += [(series, float(x), float(y)) for x, y in zip(ends, mean, strict=True)]
    return curve_frame(points)


NOTES = (
    "Every check is a one-sided paired t-test over the seeds (per seed the mean over the three "
    "environments; within a seed, environment and population every mechanism plays the same "
    "episode seed), Holm-corrected within the study; a check holds when the mean difference "
    "exceeds min_effect in the claimed direction (after the stated margin) and the adjusted "
    "p < alpha. Non-compliant agents are the population's adaptive (bandit) and scripted "
    "agents. 'Strongest simple mechanism' is the one of FixedFine, ReportSanction and "
    "WindowRep with the lowest mean violation rate. Every mechanism's base fine was selected "
    "per environment by the norm_enforcement_tune rule on the tuning seeds (welfare − "
    "enforcement cost), from the same grid within [0, max_fine]; the rules, margins and "
    "minimum effect were fixed in params.yaml before the tuned results were seen."
)
