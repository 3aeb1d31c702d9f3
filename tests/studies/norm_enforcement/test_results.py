"""norm_enforcement's table, claims and curves from hand-made run files."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from reprolab.studies.norm_enforcement import results
from reprolab.studies.norm_enforcement.metrics import COLUMNS
from tests.conftest import study_section

SEEDS = [0, 1, 2, 3, 4]


def scores(other: float, compliant: float, violation: float, cost: float) -> dict:
    """One episode's metrics with the given payoffs, violation rate and cost."""
    out = dict.fromkeys(COLUMNS, 0.0)
    out.update(
        violation_rate=violation,
        enforcement_cost=cost,
        exploitation_gain=other - compliant,
        other_payoff=other,
        compliant_payoff=compliant,
        false_reports_first=0.1,
        false_reports_last=0.1,
    )
    return out


def run(params: dict, seed: int, exploited: float) -> dict:
    """A run where simple mechanisms pay violators `exploited` more and Robust pays them less;
    ReportSanction has the lowest violation rate of the simple ones."""
    noise = 0.01 * ((seed * 7) % 5 - 2)  # mean 0 over the five seeds
    violation = {"fixed_fine": 0.3, "report_sanction": 0.1, "window_reputation": 0.2}
    episode = {}
    for mechanism in params["methods"]:
        if mechanism.startswith("robust"):
            gain = -exploited if mechanism == "robust" else 0.0
            episode[mechanism] = scores(1.0 + gain + noise, 1.0, 0.1, 0.2)
        else:
            episode[mechanism] = scores(
                1.0 + exploited + noise, 1.0, violation.get(mechanism, 0.4), 0.3
            )
    windows = params["report"]["windows"]
    curve = {"payoff": {"compliant": [0.0] * windows, "adaptive": [float(seed)] * windows}}
    return {
        "seed": seed,
        "fines": {e: dict.fromkeys(params["methods"], 1.0) for e in params["environments"]},
        "table": {e: copy.deepcopy(episode) for e in params["environments"]},
        "populations": {
            name: {
                e: {m: copy.deepcopy(episode[m]) for m in params["population_mechanisms"]}
                for e in params["environments"]
            }
            for name in params["populations"]
        },
        "trajectories": {
            e: {m: copy.deepcopy(curve) for m in params["methods"]} for e in params["environments"]
        },
    }


@pytest.fixture
def params() -> dict:
    return copy.deepcopy(study_section("norm_enforcement", "smoke"))


def by_statement(checks: list[dict], words: str) -> dict:
    return next(c for c in checks if words in c["statement"])


def test_claims_hold_on_clear_exploitation_and_robustness(params):
    runs = [run(params, s, exploited=0.5) for s in SEEDS]
    checks = results.claim_checks(params, runs, SEEDS)
    assert results.strongest_simple(params, runs) == "report_sanction"
    assert by_statement(checks, "Under FixedFine")["holds"]
    assert by_statement(checks, "Under Robust (main population)")["holds"]
    assert by_statement(checks, "enforcement cost")["holds"]
    assert by_statement(checks, "Robust, no reliability")["holds"]
    assert not by_statement(checks, "learn to file false reports")["holds"]  # no change
    assert len(checks) == 3 + 1 + 1 + len(params["populations"]) + 2 + 2


def test_claims_fail_without_exploitation(params):
    runs = [run(params, s, exploited=0.0) for s in SEEDS]
    checks = results.claim_checks(params, runs, SEEDS)
    assert not by_statement(checks, "Under FixedFine")["holds"]
    assert not by_statement(checks, "Under Robust (main population)")["holds"]


def test_table_has_a_row_per_environment_and_mechanism(params):
    runs = [run(params, s, exploited=0.5) for s in SEEDS]
    table = results.table(params, runs, SEEDS)
    assert len(table.methods) == len(params["environments"]) * len(params["methods"])
    assert len(table.records) == len(table.methods) * len(COLUMNS) * len(SEEDS)


def test_curves_average_the_payoff_over_seeds(params):
    runs = [run(params, s, exploited=0.5) for s in SEEDS]
    frame = results.curve_rows(params, runs, SEEDS)
    adaptive = frame[frame.series == "engagement/robust/adaptive"]
    assert len(adaptive) == params["report"]["windows"]
    assert np.allclose(adaptive.y.astype(float), np.mean(SEEDS))
    assert adaptive.x.iloc[-1] == params["rounds"]
