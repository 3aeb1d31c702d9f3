"""The table's columns and the report's curves, checked against a hand-built episode log whose
every number is worked out by hand below."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from reprolab.studies.norm_enforcement.environments import build_environment
from reprolab.studies.norm_enforcement.metrics import (
    COLUMNS,
    episode_metrics,
    false_reports,
    trajectories,
)
from reprolab.studies.norm_enforcement.simulation import EpisodeLog, run_episode

AUDIT_COST = 0.1


def b(rows: list[list[int]]) -> np.ndarray:
    return np.array(rows, dtype=bool)


@pytest.fixture
def hand_log() -> EpisodeLog:
    """T = 4 rounds, N = 3 agents: compliant (0), adaptive (1), greedy (2).

    Agent 0 is fined for a false report in round 1 and suspended for round 2; agent 2 is fined
    in rounds 0 and 2 and suspended for round 3.
    """
    return EpisodeLog(
        kinds=("compliant", "adaptive", "greedy"),
        active=b([[1, 1, 1], [1, 1, 1], [0, 1, 1], [1, 1, 0]]),
        violated=b([[0, 1, 1], [0, 0, 1], [0, 1, 1], [0, 0, 0]]),
        conduct=b([[0, 1, 1], [0, 1, 1], [0, 1, 1], [0, 0, 1]]),
        # round 0: 0 → 1 (1 violated), 1 → 2 (2 violated); round 1: 0 → 1 (1 violated in
        # round 0), 1 → 0 (0 never violates); round 2: 1 → 0 (suspended); round 3: 0 → 2,
        # 1 → 2 (2 violated in round 2)
        reports=np.array([[1, 2, -1], [1, 0, -1], [-1, 0, -1], [2, 2, -1]], dtype=np.int16),
        payoffs=np.array([[1.0, 2.0, 3.0], [1.0, 1.0, 2.0], [0.0, 2.0, 2.0], [2.0, 1.0, 0.0]]),
        fines=np.array([[0.0, 0.0, 0.5], [0.5, 0.0, 0.0], [0.0, 0.0, 1.0], [0.0, 0.0, 0.0]]),
        suspension=np.array([[0, 0, 0], [1, 0, 0], [0, 0, 1], [0, 0, 0]], dtype=np.int32),
        audited=b([[0, 1, 1], [1, 1, 0], [0, 1, 1], [1, 0, 0]]),  # 7 audits
        detected=b([[0, 0, 1], [0, 0, 0], [0, 0, 1], [0, 0, 0]]),
        confirmed=b([[0, 0, 1], [1, 0, 0], [0, 0, 1], [0, 0, 0]]),
        belief=np.full((4, 3), np.nan),
        welfare=np.array([6.0, 4.0, 3.5, 3.0]),
    )


def test_false_reports_mark_only_filed_reports_naming_a_non_violator(hand_log):
    # a report is false when its target violated neither that round nor the one before;
    # agent 0 never violates, so a "report" of −1 read as naming agent 0 would count as false
    expected = b([[0, 0, 0], [0, 1, 0], [0, 1, 0], [0, 0, 0]])
    assert np.array_equal(false_reports(hand_log), expected)


def test_episode_metrics_by_hand(hand_log):
    metrics = episode_metrics(hand_log, AUDIT_COST)
    assert set(COLUMNS) <= set(metrics)
    # net payoff per round: compliant (4 − 0.5)/4, adaptive 6/4, greedy (7 − 1.5)/4
    compliant, adaptive, greedy = 3.5 / 4, 6.0 / 4, 5.5 / 4
    # compliant agent: mean payoff per active round 4/3, one round suspended
    cost = (AUDIT_COST * 7 + 0.5 + 4 / 3) / 4
    expected = {
        "violation_rate": 5 / 10,  # 5 violations in 10 active agent-rounds
        "exploitation_gain": (adaptive + greedy) / 2 - compliant,
        "false_sanction_rate": 1 / 3,  # one confirmation in the compliant's 3 active rounds
        "compliant_suspended": 1.0,
        "enforcement_cost": cost,
        "welfare": 16.5 / 4,
        "false_report_share": 2 / 4,  # the adaptive's reports: rounds 1 and 2 of 4 are false
        "compliant_payoff": compliant,
        "other_payoff": (adaptive + greedy) / 2,
        "false_reports_first": 0 / 2,  # quarter = round 0: none in 2 active other rounds
        "false_reports_last": 0 / 1,  # round 3: the adaptive's is true, greedy suspended
    }
    assert metrics == pytest.approx(expected)
    assert all(isinstance(value, float) for value in metrics.values())


def test_quarters_span_several_rounds(hand_log):
    # the same four rounds twice: T = 8, quarters of 2 rounds
    twice = EpisodeLog(
        kinds=hand_log.kinds,
        **{
            f.name: np.concatenate([getattr(hand_log, f.name)] * 2)
            for f in dataclasses.fields(EpisodeLog)
            if f.name != "kinds"
        },
    )
    metrics = episode_metrics(twice, AUDIT_COST)
    assert metrics["false_reports_first"] == pytest.approx(1 / 4)  # rounds 0-1: 1 of 2 + 2
    assert metrics["false_reports_last"] == pytest.approx(1 / 3)  # rounds 6-7: 1 of 2 + 1
    assert metrics["false_report_share"] == pytest.approx(4 / 8)
    assert metrics["violation_rate"] == pytest.approx(10 / 20)


def test_without_compliant_agents_the_compliant_columns_are_nan(hand_log):
    log = dataclasses.replace(hand_log, kinds=("greedy", "adaptive", "greedy"))
    metrics = episode_metrics(log, AUDIT_COST)
    assert np.isnan(metrics["compliant_payoff"]) and np.isnan(metrics["exploitation_gain"])
    assert np.isnan(metrics["compliant_suspended"])
    assert metrics["false_sanction_rate"] == 0.0
    assert metrics["enforcement_cost"] == pytest.approx(AUDIT_COST * 7 / 4)  # audits only


def test_trajectories_by_hand(hand_log):
    curves = trajectories(hand_log, windows=2)  # windows: rounds 0-1 and 2-3
    assert list(curves) == ["payoff", "sanctions", "false_reports"]
    for curve in curves.values():
        assert list(curve) == ["compliant", "greedy", "adaptive"]  # AGENT_TYPES order
        assert all(len(values) == 2 for values in curve.values())
    # cumulative net payoff at rounds 1 and 3: the last is each agent's total net payoff
    assert curves["payoff"] == {
        "compliant": pytest.approx([1.5, 3.5]),
        "greedy": pytest.approx([4.5, 5.5]),
        "adaptive": pytest.approx([3.0, 6.0]),
    }
    assert curves["sanctions"] == {
        "compliant": [1.0, 0.0],
        "greedy": [1.0, 1.0],
        "adaptive": [0.0, 0.0],
    }
    assert curves["false_reports"] == {
        "compliant": [0.0, 0.0],  # both its reports name a recent violator
        "greedy": [0.0, 0.0],
        "adaptive": pytest.approx([1 / 2, 1 / 2]),
    }


def test_trajectories_end_at_the_total_net_payoff(environment_params, enforcement, agent_spec):
    log = run_episode(
        build_environment("engagement", environment_params["engagement"]),
        "robust",
        enforcement,
        {"compliant": 3, "adaptive": 2, "greedy": 1},
        agent_spec,
        {"tpr": 0.5, "fpr": 0.01},
        rounds=50,
        seed=3,
    )
    curves = trajectories(log, windows=7)
    kinds = np.array(log.kinds)
    total = (log.payoffs - log.fines).sum(axis=0)
    for kind in ("compliant", "adaptive", "greedy"):
        assert all(len(curves[name][kind]) == 7 for name in curves)
        assert curves["payoff"][kind][-1] == pytest.approx(total[kinds == kind].mean())
        confirmed = log.confirmed[:, kinds == kind].sum() / (kinds == kind).sum()
        assert sum(curves["sanctions"][kind]) == pytest.approx(confirmed)
    metrics = episode_metrics(log, enforcement.audit_cost)
    assert metrics["other_payoff"] * 50 == pytest.approx(total[kinds != "compliant"].mean())
