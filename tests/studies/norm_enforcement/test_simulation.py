"""One episode end to end: reproducibility, suspension windows, what each agent type does, what
agents observe, and the population's order."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from reprolab.studies.norm_enforcement.actions import Action, Observation
from reprolab.studies.norm_enforcement.agents import leading_competitor
from reprolab.studies.norm_enforcement.environments import build_environment
from reprolab.studies.norm_enforcement.mechanisms import MECHANISMS, Mechanism
from reprolab.studies.norm_enforcement.metrics import false_reports
from reprolab.studies.norm_enforcement.simulation import (
    EpisodeLog,
    population_kinds,
    run_episode,
)

MIXED = {"compliant": 2, "adaptive": 2, "greedy": 1, "periodic": 1, "false_flagger": 1}
PERFECT = {"tpr": 1.0, "fpr": 0.0}


@pytest.fixture
def episode(environment_params, enforcement, agent_spec, perception):
    """run_episode with the shared params; keyword arguments override them."""

    def play(mechanism: str, **changes) -> EpisodeLog:
        env = changes.pop("env", "fishery")
        args = {
            "environment": build_environment(env, environment_params[env]),
            "mechanism": mechanism,
            "enforcement": enforcement,
            "population": MIXED,
            "agent_spec": agent_spec,
            "perception": perception,
            "rounds": 30,
            "seed": 0,
            **changes,
        }
        return run_episode(**args)

    return play


def assert_same_log(a: EpisodeLog, b: EpisodeLog) -> None:
    assert a.kinds == b.kinds
    for field in dataclasses.fields(EpisodeLog):
        if field.name != "kinds":
            x, y = getattr(a, field.name), getattr(b, field.name)
            assert x.dtype == y.dtype and np.array_equal(x, y, equal_nan=True), field.name


@pytest.mark.parametrize("mechanism", ["robust", "report_sanction"])
def test_same_seed_gives_the_same_log(episode, mechanism):
    first, second = episode(mechanism, env="engagement"), episode(mechanism, env="engagement")
    assert_same_log(first, second)
    other = episode(mechanism, env="engagement", seed=1)
    assert not np.array_equal(first.payoffs, other.payoffs)


def test_log_shapes_and_types(episode):
    log = episode("robust", rounds=12)
    assert log.kinds == (
        "compliant",
        "compliant",
        "greedy",
        "adaptive",
        "adaptive",
        "periodic",
        "false_flagger",
    )
    for name in ("active", "violated", "audited", "detected", "confirmed"):
        assert getattr(log, name).shape == (12, 7) and getattr(log, name).dtype == bool
    assert log.reports.dtype == np.int16 and log.suspension.dtype == np.int32
    assert log.payoffs.shape == log.fines.shape == log.belief.shape == (12, 7)
    assert log.welfare.shape == (12,)
    assert not np.isnan(log.belief).any()  # robust keeps a belief about everyone


def expected_inactive(suspension: np.ndarray) -> np.ndarray:
    """[T, N]: a suspension of s imposed in round t covers rounds t+1 … t+s."""
    rounds = suspension.shape[0]
    inactive = np.zeros(suspension.shape, dtype=bool)
    for t, i in zip(*np.nonzero(suspension), strict=True):
        inactive[t + 1 : min(t + 1 + suspension[t, i], rounds), i] = True
    return inactive


@pytest.mark.parametrize(
    "mechanism", ["report_sanction", "robust_no_reliability", "window_reputation"]
)
def test_suspension_covers_exactly_the_next_rounds(episode, make_enforcement, mechanism):
    params = make_enforcement(tpr=1.0, fpr=0.0, suspension=3)
    log = episode(mechanism, enforcement=params, rounds=60)
    assert (log.suspension > 0).sum() >= 3
    assert np.all(log.suspension[log.suspension > 0] == 3)
    assert not (log.suspension > 0)[~log.active].any()  # only active agents are sanctioned
    assert np.array_equal(~log.active, expected_inactive(log.suspension))
    assert log.active[0].all()


@pytest.mark.parametrize("env", ["engagement", "fishery", "marketplace"])
@pytest.mark.parametrize("mechanism", MECHANISMS)
def test_each_agent_type_keeps_to_its_behaviour(episode, mechanism, env):
    log = episode(mechanism, env=env, rounds=25)
    kinds = np.array(log.kinds)
    assert not log.violated[:, kinds == "compliant"].any()
    assert not log.violated[:, kinds == "false_flagger"].any()
    greedy = kinds == "greedy"
    assert np.array_equal(log.violated[:, greedy], log.active[:, greedy])
    periodic = kinds == "periodic"
    every_11th = (np.arange(25) % 11 == 0)[:, None]
    assert np.array_equal(log.violated[:, periodic], log.active[:, periodic] & every_11th)
    assert np.all(
        (log.reports[:, kinds == "false_flagger"] >= 0) == log.active[:, kinds == "false_flagger"]
    )
    assert np.all(log.reports[:, greedy | periodic] == -1)
    # nobody acts while suspended, nobody reports itself, a suspended agent earns nothing
    assert np.all(log.reports[~log.active] == -1)
    assert not (log.violated & ~log.active).any()
    assert np.all(log.payoffs[~log.active] == 0)
    assert not (log.reports == np.arange(7)[None, :]).any()
    # the mechanism only audits active agents and only detects audited ones
    assert not (log.audited & ~log.active).any() and not (log.detected & ~log.audited).any()


def test_fishery_log_replays_through_the_environment(episode, environment_params):
    log = episode("robust_no_reliability", rounds=40)
    env = build_environment("fishery", environment_params["fishery"])
    env.reset(7, np.random.default_rng(0))
    for t in range(40):
        outcome = env.step(log.violated[t], log.active[t], np.random.default_rng(0))
        assert np.array_equal(outcome.payoffs, log.payoffs[t])
        assert outcome.welfare == log.welfare[t]


def test_no_enforcement_means_no_audits_fines_or_suspensions(episode):
    log = episode("none", rounds=40)
    assert log.active.all()
    assert not (log.audited.any() or log.detected.any() or log.confirmed.any())
    assert np.all(log.fines == 0) and np.all(log.suspension == 0)
    assert np.isnan(log.belief).all()
    assert log.violated.any()  # there was something to enforce


def test_population_kinds_follow_agent_types_order():
    population = {"false_flagger": 1, "adaptive": 2, "compliant": 1, "periodic": 0}
    assert population_kinds(population) == ("compliant", "adaptive", "adaptive", "false_flagger")
    assert population_kinds({}) == ()
    with pytest.raises(ValueError, match="saboteur"):
        population_kinds({"compliant": 2, "saboteur": 1})


class _Recorder:
    """A language model for the adaptive seats: violates in even rounds, reports the leader,
    and keeps every observation."""

    def __init__(self):
        self.seen: list[Observation] = []

    def act(self, observation: Observation) -> Action:
        self.seen.append(observation)
        return Action(observation.round % 2 == 0, leading_competitor(observation))


def test_agents_observe_the_episode_so_far(episode, make_enforcement, environment_params):
    model = _Recorder()
    params = make_enforcement(tpr=1.0, fpr=0.0)
    log = episode(
        "robust_no_reliability", enforcement=params, perception=PERFECT, model=model, rounds=40
    )
    kinds = np.array(log.kinds)
    seats = np.flatnonzero(kinds == "adaptive")
    # the seats are asked exactly in their active rounds
    asked = {(o.round, o.agent) for o in model.seen}
    assert asked == {
        (t, int(i)) for t, i in zip(*np.nonzero(log.active), strict=True) if i in seats
    }
    assert (~log.active[:, seats]).any()  # some seat was suspended
    net = log.payoffs - log.fines
    rules = Mechanism("robust_no_reliability", params, 7).rules
    norm = build_environment("fishery", environment_params["fishery"]).norm
    for o in model.seen:
        t, i = o.round, o.agent
        assert (o.rounds, o.environment, o.rules, o.suspended) == (40, "fishery", rules, 0)
        assert o.norm == norm
        assert np.allclose(o.payoffs, net[:t].sum(axis=0))
        assert o.fines == pytest.approx(log.fines[:t, i].sum())
        assert o.last_payoff == (net[t - 1, i] if t > 0 and log.active[t - 1, i] else 0.0)
        # perfect perception: exactly the others who violated last round
        violators = set(np.flatnonzero(log.violated[t - 1]).tolist()) if t > 0 else set()
        assert set(o.noticed) == violators - {i}
        assert log.violated[t, i] == (t % 2 == 0)
        assert log.reports[t, i] == leading_competitor(o)
    # compliant agents report one of last round's other violators, or nobody
    for i in np.flatnonzero(kinds == "compliant"):
        for t in np.flatnonzero(log.active[:, i]):
            violators = set(np.flatnonzero(log.violated[t - 1]).tolist()) - {i} if t else set()
            report = int(log.reports[t, i])
            assert report in violators if violators else report == -1


def test_blind_compliant_agents_never_report(episode):
    log = episode("report_sanction", perception={"tpr": 0.0, "fpr": 0.0}, rounds=40)
    assert np.all(log.reports[:, np.array(log.kinds) == "compliant"] == -1)


def test_honest_reporters_with_perfect_perception_file_no_false_reports(
    environment_params, enforcement, agent_spec
):
    log = run_episode(
        build_environment("fishery", environment_params["fishery"]),
        "robust",
        enforcement,
        {"compliant": 3, "periodic": 1},
        {**agent_spec, "period": 3},
        PERFECT,
        rounds=60,
        seed=0,
    )
    compliant = np.array(log.kinds) == "compliant"
    assert (log.reports[:, compliant] >= 0).any()  # they did report the periodic agent
    assert not false_reports(log)[:, compliant].any()
