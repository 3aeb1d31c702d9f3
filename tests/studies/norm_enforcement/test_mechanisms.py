"""The enforcement mechanisms: whom each audits, what a confirmed violation or false report
costs, escalation and its decayed record, and the params they are built from."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from reprolab.studies.norm_enforcement.mechanisms import (
    MECHANISMS,
    EnforcementParams,
    Mechanism,
    ranked_audits,
)

N = 5
NOBODY = np.zeros((N, N), dtype=bool)


def rng(seed: int = 0) -> np.random.Generator:
    return np.random.default_rng(seed)


def reported(pairs: list[tuple[int, int]], n: int = N) -> np.ndarray:
    """[n, n] reports from (reporter, reported) pairs."""
    reports = np.zeros((n, n), dtype=bool)
    for j, i in pairs:
        reports[j, i] = True
    return reports


def test_params_are_read_from_the_section(enforcement, enforcement_section):
    assert enforcement.fine == 0.5 and enforcement.prior == (1.0, 4.0)
    assert enforcement.budget == 2 and enforcement.decay == 0.98
    assert (enforcement.detector.tpr, enforcement.detector.fpr) == (0.7, 0.05)
    # the base fine comes from the argument (tuned); the section may not set one
    assert EnforcementParams.from_params(enforcement_section, 1.5).fine == 1.5
    with pytest.raises(ValueError, match=r"unknown key\(s\) \['fine'\]"):
        EnforcementParams.from_params({**enforcement_section, "fine": 9.0}, 1.5)


def test_missing_enforcement_keys_are_named(enforcement_section):
    del enforcement_section["suspend_after"]
    with pytest.raises(KeyError, match="suspend_after"):
        EnforcementParams.from_params(enforcement_section, 0.5)
    del enforcement_section["prior"]
    with pytest.raises(KeyError) as error:
        EnforcementParams.from_params(enforcement_section, 0.5)
    assert "suspend_after" in str(error.value) and "prior" in str(error.value)


def test_unknown_mechanism_is_named(enforcement):
    with pytest.raises(ValueError, match="'lottery'"):
        Mechanism("lottery", enforcement, N)


def test_every_mechanism_publishes_rules(enforcement):
    rules = {name: Mechanism(name, enforcement, N).rules for name in MECHANISMS}
    baselines = ["none", "fixed_fine", "report_sanction", "window_reputation"]
    assert len({rules[name] for name in [*baselines, "robust", "robust_flat"]}) == 6
    assert "0.5" in rules["fixed_fine"] and "suspension" not in rules["fixed_fine"]
    assert "report" in rules["report_sanction"]
    assert "10 rounds" in rules["window_reputation"]
    assert "2-fold" in rules["robust"] and "2-fold" not in rules["robust_flat"]


def test_ranked_audits_take_the_highest_eligible_priorities():
    priority = np.array([3.0, 5.0, 1.0, 4.0, 2.0])
    eligible = np.array([True, False, True, True, True])
    for seed in range(10):
        chosen = ranked_audits(priority, eligible, 2, rng(seed))
        assert np.flatnonzero(chosen).tolist() == [0, 3]
    assert ranked_audits(priority, eligible, 9, rng()).tolist() == eligible.tolist()


def test_none_never_audits_or_fines(enforcement):
    mechanism = Mechanism("none", enforcement, N)
    generator = rng()
    for _ in range(50):
        violations = generator.random(N) < 0.8
        reports = generator.random((N, N)) < 0.5
        verdict = mechanism.step(violations, reports, np.ones(N, bool), generator)
        assert not verdict.audited.any() and not verdict.detected.any()
        assert not verdict.confirmed.any()
        assert np.all(verdict.fines == 0) and np.all(verdict.suspension == 0)
        assert np.isnan(verdict.belief).all()


def test_fixed_fine_audits_budget_active_agents_and_only_fines(make_enforcement):
    params = make_enforcement(tpr=1.0, fpr=0.0)
    mechanism = Mechanism("fixed_fine", params, N)
    generator = rng(1)
    counts = np.zeros(N)
    for _ in range(2000):
        active = generator.random(N) < 0.7
        violations = generator.random(N) < 0.5
        verdict = mechanism.step(violations, NOBODY, active, generator)
        assert verdict.audited.sum() == min(params.budget, active.sum())
        assert not (verdict.audited & ~active).any()
        assert np.array_equal(verdict.detected, verdict.audited & violations)
        assert np.array_equal(verdict.fines, np.where(verdict.detected, 0.5, 0.0))
        assert np.all(verdict.suspension == 0)
        counts += verdict.audited & active
    # uniform: every agent gets the same share of the audits
    share = counts / counts.sum()
    assert share == pytest.approx(np.full(N, 1 / N), abs=0.02)


def test_report_sanction_audits_the_most_reported(make_enforcement):
    params = make_enforcement(tpr=1.0, fpr=0.0)
    reports = reported([(0, 3), (1, 3), (2, 3), (0, 1), (4, 1), (4, 0)])
    violations = np.array([True, True, True, True, False])
    for seed in range(20):
        mechanism = Mechanism("report_sanction", params, N)
        verdict = mechanism.step(violations, reports, np.ones(N, bool), rng(seed))
        assert np.flatnonzero(verdict.audited).tolist() == [1, 3]
        assert verdict.fines.tolist() == [0.0, 0.5, 0.0, 0.5, 0.0]
        assert verdict.suspension.tolist() == [0, 2, 0, 2, 0]
    # the most reported agent is suspended (inactive): the next two are audited
    active = np.array([True, True, True, False, True])
    verdict = Mechanism("report_sanction", params, N).step(violations, reports, active, rng())
    assert np.flatnonzero(verdict.audited).tolist() == [0, 1]


def test_report_sanction_leaves_budget_unused_and_breaks_ties_at_random(make_enforcement):
    params = make_enforcement(tpr=1.0, fpr=0.0)
    violations = np.zeros(N, bool)
    mechanism = Mechanism("report_sanction", params, N)
    verdict = mechanism.step(violations, reported([(0, 2)]), np.ones(N, bool), rng())
    assert np.flatnonzero(verdict.audited).tolist() == [2]
    assert not verdict.confirmed.any() and np.all(verdict.fines == 0)
    verdict = mechanism.step(violations, NOBODY, np.ones(N, bool), rng())
    assert not verdict.audited.any()
    one = make_enforcement(budget=1)
    tied = reported([(0, 1), (0, 4)])
    chosen = {
        int(
            np.flatnonzero(
                Mechanism("report_sanction", one, N)
                .step(violations, tied, np.ones(N, bool), rng(seed))
                .audited
            )[0]
        )
        for seed in range(40)
    }
    assert chosen == {1, 4}


def test_window_reputation_sanctions_repeat_detections_then_clears(make_enforcement):
    # budget 3 of 3 agents and a perfect detector: every violation is detected
    params = make_enforcement(budget=3, tpr=1.0, fpr=0.0)
    mechanism = Mechanism("window_reputation", params, 3)
    schedule = {0: {0, 5, 6, 7}, 1: {0, 10}, 2: {1, 10}}
    confirmed, fines, suspension = [], [], []
    for t in range(13):
        violations = np.array([t in schedule[i] for i in range(3)])
        verdict = mechanism.step(violations, reported([], 3), np.ones(3, bool), rng(t))
        assert verdict.audited.all() and np.array_equal(verdict.detected, violations)
        confirmed.append(verdict.confirmed)
        fines.append(verdict.fines)
        suspension.append(verdict.suspension)
    confirmed = np.array(confirmed)
    # agent 0: two detections by round 5, then cleared, two again by round 7; agent 1's are 10
    # rounds apart (outside a window of 10); agent 2's 9 apart (inside)
    assert [np.flatnonzero(confirmed[:, i]).tolist() for i in range(3)] == [[5, 7], [], [10]]
    assert np.array_equal(np.array(fines), np.where(confirmed, 0.5, 0.0))
    assert np.array_equal(np.array(suspension), np.where(confirmed, 2, 0))


def _everyone_violates_or_not(t: int) -> np.ndarray:
    """Agent 0 violates every round, agent 1 in rounds 0 and 2, agent 2 never."""
    return np.array([True, t in (0, 2), False])


# The record n ← 0.98·n + confirmed, by hand: agent 0 is confirmed every round, agent 1 in
# rounds 0 and 2 (its record fades in round 1). The fine is 0.5·2^(n−1), capped at 2.0, and
# suspension (2 rounds) starts once n ≥ 3.
RECORD = {
    0: [1.0, 1.98, 2.9404, 3.881592, 4.80396016],
    1: [1.0, 0.98, 1.9604, 1.921192, 1.88276816],
}


@pytest.mark.parametrize("name", ["robust", "robust_no_reliability"])
def test_escalation_follows_the_decayed_record(name, make_enforcement):
    params = make_enforcement(budget=3, tpr=1.0, fpr=0.0)
    mechanism = Mechanism(name, params, 3)
    # robust audits all three with its budget; the ablation needs every agent reported
    reports = reported([], 3) if name == "robust" else ~np.eye(3, dtype=bool)
    for t in range(5):
        verdict = mechanism.step(_everyone_violates_or_not(t), reports, np.ones(3, bool), rng(t))
        assert verdict.audited.all()
        assert verdict.confirmed.tolist() == [True, t in (0, 2), False]
        n0 = RECORD[0][t]
        assert verdict.fines[0] == pytest.approx(min(0.5 * 2.0 ** (n0 - 1), 2.0))
        assert verdict.suspension[0] == (2 if n0 >= 3 else 0)
        n1 = RECORD[1][t]
        assert mechanism.confirmations[1] == pytest.approx(n1)
        expected = 0.5 * 2.0 ** (n1 - 1) if t in (0, 2) else 0.0
        assert verdict.fines[1] == pytest.approx(expected) and verdict.suspension[1] == 0
        assert verdict.fines[2] == 0.0 and verdict.suspension[2] == 0
    assert mechanism.confirmations == pytest.approx([RECORD[0][4], RECORD[1][4], 0.0])
    # the cap binds from round 3 (0.5·2^2.88 > 2), suspension from round 3 (n = 3.88 ≥ 3)
    assert verdict.fines[0] == 2.0


def test_suspension_starts_exactly_at_suspend_after(make_enforcement):
    # without decay the record counts 1, 2, 3, 4: suspended from the third confirmation on
    params = make_enforcement(budget=3, tpr=1.0, fpr=0.0, decay=1.0)
    mechanism = Mechanism("robust_no_reliability", params, 3)
    violations = np.array([True, False, False])
    suspensions, fines = [], []
    for t in range(4):
        verdict = mechanism.step(violations, reported([(1, 0)], 3), np.ones(3, bool), rng(t))
        suspensions.append(int(verdict.suspension[0]))
        fines.append(float(verdict.fines[0]))
    assert suspensions == [0, 0, 2, 2]
    assert fines == [0.5, 1.0, 2.0, 2.0]  # 0.5·2^(n−1), capped at 2.0


def test_robust_flat_charges_the_flat_fine_and_suspension(make_enforcement):
    params = make_enforcement(budget=3, tpr=1.0, fpr=0.0)
    mechanism = Mechanism("robust_flat", params, 3)
    for t in range(5):
        verdict = mechanism.step(
            _everyone_violates_or_not(t), reported([], 3), np.ones(3, bool), rng(t)
        )
        confirmed = [True, t in (0, 2), False]
        assert verdict.confirmed.tolist() == confirmed
        assert verdict.fines.tolist() == [0.5 if c else 0.0 for c in confirmed]
        assert verdict.suspension.tolist() == [2 if c else 0 for c in confirmed]


def test_robust_needs_a_credible_detection_before_confirming(make_enforcement):
    params = make_enforcement(budget=N)  # tpr 0.7, fpr 0.05: P(violated | detected) at the
    violations = np.array([True, False, False, False, False])  # prior mean 0.2 is 0.78 < 0.8
    fresh_detections = 0
    for seed in range(30):
        mechanism = Mechanism("robust", params, N)
        verdict = mechanism.step(violations, NOBODY, np.ones(N, bool), rng(seed))
        fresh_detections += verdict.detected[0]
        assert not verdict.confirmed.any() and np.all(verdict.fines == 0)
        assert np.allclose(verdict.belief, mechanism.violation_rate.mean())
    assert fresh_detections > 10
    # a record of detections makes the next detection of agent 0 credible (and only its)
    record = Mechanism("robust", params, N)
    for _ in range(10):
        record.violation_rate.observe(0, True, params.tpr, params.fpr)
    confirmed = 0
    for seed in range(30):
        mechanism = copy.deepcopy(record)
        verdict = mechanism.step(violations, NOBODY, np.ones(N, bool), rng(seed))
        assert np.array_equal(verdict.confirmed, verdict.detected & violations)
        assert np.array_equal(verdict.fines, np.where(verdict.confirmed, 0.5, 0.0))
        confirmed += verdict.confirmed[0]
    assert confirmed > 10


def test_robust_thompson_audits_a_known_high_risk_agent(enforcement):
    prepared = Mechanism("robust", enforcement, N)
    for _ in range(50):
        prepared.violation_rate.observe(0, True, enforcement.tpr, enforcement.fpr)
    assert prepared.violation_rate.mean()[0] > 0.8
    counts = np.zeros(N)
    for seed in range(1000):
        mechanism = copy.deepcopy(prepared)
        verdict = mechanism.step(np.zeros(N, bool), NOBODY, np.ones(N, bool), rng(seed))
        assert verdict.audited.sum() == enforcement.budget
        counts += verdict.audited
    share = counts / 1000
    assert share[0] >= 0.8
    # the other slot is the uniform one (1/4 each): nobody is safe from audit
    assert np.all((share[1:] > 0.15) & (share[1:] < 0.4))


def test_robust_audits_only_active_agents(enforcement):
    mechanism = Mechanism("robust", enforcement, N)
    active = np.array([False, True, False, True, True])
    reports = reported([(1, 0), (3, 0), (4, 2)])  # reports against suspended agents
    for seed in range(50):
        verdict = mechanism.step(np.ones(N, bool), reports, active, rng(seed))
        assert verdict.audited.sum() == 2 and not (verdict.audited & ~active).any()


def test_robust_confirms_a_false_report_by_a_discredited_reporter(make_enforcement):
    # everyone audited; fpr 0, so the innocent target's audit never fires
    params = make_enforcement(budget=3, tpr=0.7, fpr=0.0)
    violations = np.zeros(3, bool)
    reports = reported([(0, 1)], 3)  # agent 0 reports the innocent agent 1
    fresh = Mechanism("robust", params, 3)
    verdict = fresh.step(violations, reports, np.ones(3, bool), rng())
    # a reporter at the prior (f = 0.2): P(false | not fired) = 0.2 / (0.2 + 0.8·0.3) < 0.8
    assert not verdict.confirmed.any() and np.all(verdict.fines == 0)
    assert fresh.false_report_rate.mean()[0] > fresh.false_report_rate.mean()[2]
    discredited = Mechanism("robust", params, 3)
    for _ in range(30):
        discredited.false_report_rate.observe(0, True, 1.0, 0.0)
    f = discredited.false_report_rate.mean()[0]
    assert f > 0.8
    assert f / (f + (1 - f) * 0.3) > 0.8  # P(false | not fired), by hand
    verdict = discredited.step(violations, reports, np.ones(3, bool), rng())
    assert verdict.audited.all() and not verdict.detected.any()
    assert verdict.confirmed.tolist() == [True, False, False]
    assert verdict.fines.tolist() == [0.5, 0.0, 0.0]  # the first confirmation: n = 1
    assert verdict.suspension.tolist() == [0, 0, 0]


def test_robust_no_reliability_never_confirms_false_reports(make_enforcement):
    params = make_enforcement(budget=3, tpr=0.7, fpr=0.0)
    mechanism = Mechanism("robust_no_reliability", params, 3)
    assert mechanism.violation_rate is None and mechanism.false_report_rate is None
    for seed in range(30):
        verdict = mechanism.step(
            np.zeros(3, bool), reported([(0, 1)], 3), np.ones(3, bool), rng(seed)
        )
        assert verdict.audited[1] and not verdict.confirmed.any()
        assert np.isnan(verdict.belief).all()


def test_robust_no_reliability_audits_reported_plus_one_random(enforcement):
    reports = reported([(0, 3), (1, 3), (2, 4)])
    others = set()
    for seed in range(60):
        mechanism = Mechanism("robust_no_reliability", enforcement, N)
        verdict = mechanism.step(np.zeros(N, bool), reports, np.ones(N, bool), rng(seed))
        audited = set(np.flatnonzero(verdict.audited).tolist())
        assert len(audited) == 2 and 3 in audited  # budget − 1 = 1 to the most reported
        others |= audited - {3}
    assert others == {0, 1, 2, 4}
