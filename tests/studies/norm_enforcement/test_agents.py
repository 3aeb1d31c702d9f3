"""The smoke-scale agents: the bandit learns what pays, the scripted and compliant agents follow
their rules, whom they report, and the language-model seat."""

from __future__ import annotations

import numpy as np
import pytest

from reprolab.studies.norm_enforcement.actions import Action, Observation
from reprolab.studies.norm_enforcement.agents import (
    AGENT_TYPES,
    MACRO_ACTIONS,
    BanditAgent,
    Compliant,
    LanguageModelSeat,
    Scripted,
    build_agent,
    leading_competitor,
    random_other,
)

VIOLATING_ARMS = np.array([violate for violate, _ in MACRO_ACTIONS])


def obs(
    agent: int = 0,
    round: int = 0,
    payoffs=(1.0, 3.0, 2.0, 3.0),
    noticed: tuple[int, ...] = (),
) -> Observation:
    return Observation(
        round=round,
        rounds=100,
        agent=agent,
        environment="fishery",
        norm="Do not catch more than your quota.",
        rules="Nobody audits or sanctions.",
        state={"stock": 50.0, "quota": 0.8},
        payoffs=np.array(payoffs, dtype=float),
        last_payoff=0.0,
        fines=0.0,
        suspended=0,
        noticed=noticed,
    )


@pytest.mark.parametrize("violating_pays", [True, False])
def test_bandit_concentrates_on_the_arms_that_pay(violating_pays):
    agent = BanditAgent(exploration=0.1, step_size=0.1, rng=np.random.default_rng(3))
    assert agent.probabilities() == pytest.approx(np.full(6, 1 / 6))
    choices = []
    for t in range(300):
        action = agent.act(obs(round=t))
        good = action.violate == violating_pays
        agent.learn(1.0 if good else -1.0, 0)
        choices.append(good)
    probabilities = agent.probabilities()
    assert probabilities.sum() == pytest.approx(1.0)
    better = VIOLATING_ARMS if violating_pays else ~VIOLATING_ARMS
    # all 1 − ε on the best (better) arm, ε spread uniformly: 1 − ε + 3ε/6 on the better half
    assert probabilities[better].sum() == pytest.approx(1 - 0.1 / 2)
    assert np.mean(choices[-100:]) > 0.85


def test_bandit_action_reports_by_its_arm():
    agent = BanditAgent(exploration=1.0, step_size=0.1, rng=np.random.default_rng(0))
    seen = set()
    for t in range(300):
        action = agent.act(obs(agent=1, round=t))
        violate, whom = MACRO_ACTIONS[agent.arm]
        assert action.violate == violate
        if whom == "nobody":
            assert action.report is None
        elif whom == "leader":
            assert action.report == 3  # payoffs (1, 3, 2, 3): the observer 1 excluded
        else:
            assert action.report in (0, 2, 3)
        seen.add(agent.arm)
    assert seen == set(range(len(MACRO_ACTIONS)))


def test_suspension_reduces_the_felt_reward():
    free = BanditAgent(0.1, 0.5, np.random.default_rng(1))
    suspended = BanditAgent(0.1, 0.5, np.random.default_rng(1))
    for agent, suspension in ((free, 0), (suspended, 0)):
        agent.act(obs())
        agent.learn(2.0, suspension)
    arm = free.arm
    assert suspended.arm == arm and free.values[arm] == pytest.approx(1.0)  # 0.5·2
    for agent, suspension in ((free, 0), (suspended, 3)):
        agent.arm = arm
        agent.learn(1.0, suspension)
    # mean payoff per active round so far: (2 + 1) / 2 = 1.5; 3 rounds forgo 4.5
    assert free.values[arm] == pytest.approx(1.0 + 0.5 * (1.0 - 1.0))
    assert suspended.values[arm] == pytest.approx(1.0 + 0.5 * (1.0 - 4.5 - 1.0))
    assert suspended.values[arm] < free.values[arm]


def test_compliant_never_violates_and_reports_only_what_it_noticed():
    agent = Compliant(np.random.default_rng(2))
    assert agent.act(obs()) == Action(violate=False, report=None)
    counts = {1: 0, 3: 0}
    for t in range(400):
        action = agent.act(obs(round=t, noticed=(1, 3)))
        assert action.violate is False
        counts[action.report] += 1
    assert 150 < counts[1] < 250  # uniform among the noticed
    agent.learn(5.0, 2)  # learns nothing
    assert agent.act(obs(noticed=(2,))) == Action(violate=False, report=2)


def test_scripted_period_semantics():
    rounds = range(12)
    assert [Scripted(3, False).act(obs(round=t)).violate for t in rounds] == [
        t % 3 == 0 for t in rounds
    ]
    assert all(Scripted(1, False).act(obs(round=t)).violate for t in rounds)
    assert not any(Scripted(0, False).act(obs(round=t)).violate for t in rounds)
    assert Scripted(1, False).act(obs()).report is None
    assert Scripted(0, True).act(obs(agent=1)).report == 3


def test_leading_competitor_is_the_best_other_lowest_index_on_ties():
    assert leading_competitor(obs(agent=0, payoffs=(1.0, 3.0, 2.0, 3.0))) == 1
    assert leading_competitor(obs(agent=1, payoffs=(1.0, 3.0, 2.0, 3.0))) == 3
    assert leading_competitor(obs(agent=2, payoffs=(0.0, -1.0, 9.0, -1.0))) == 0
    assert leading_competitor(obs(agent=0, payoffs=(5.0, -2.0, -1.0, -3.0))) == 2
    rng = np.random.default_rng(4)
    for _ in range(200):
        payoffs = rng.integers(-2, 3, size=5).astype(float)
        agent = int(rng.integers(5))
        leader = leading_competitor(obs(agent=agent, payoffs=payoffs))
        assert leader != agent
        assert payoffs[leader] == np.delete(payoffs, agent).max()


def test_random_other_never_picks_the_observer_and_is_uniform():
    rng = np.random.default_rng(5)
    payoffs = np.zeros(4)
    for agent in range(4):
        picks = np.array(
            [random_other(obs(agent=agent, payoffs=payoffs), rng) for _ in range(3000)]
        )
        assert not (picks == agent).any()
        counts = np.bincount(picks, minlength=4)
        others = np.delete(counts, agent) / 3000
        assert others == pytest.approx(np.full(3, 1 / 3), abs=0.04)


class _Stub:
    """A language model that always answers the same action and remembers what it saw."""

    def __init__(self, action: Action):
        self.action, self.seen = action, []

    def act(self, observation: Observation) -> Action:
        self.seen.append(observation)
        return self.action


def test_language_model_seat_delegates_act_and_ignores_learn():
    stub = _Stub(Action(violate=True, report=2))
    seat = LanguageModelSeat(stub)
    observation = obs(round=7)
    assert seat.act(observation) == Action(violate=True, report=2)
    assert stub.seen == [observation]
    seat.learn(-3.0, 2)  # the stub has no learn: nothing is passed on
    assert stub.seen == [observation]


def test_build_agent_types(agent_spec):
    rng = np.random.default_rng(0)
    assert isinstance(build_agent("compliant", agent_spec, rng), Compliant)
    greedy = build_agent("greedy", agent_spec, rng)
    assert (greedy.period, greedy.report_leader) == (1, False)
    periodic = build_agent("periodic", agent_spec, rng)
    assert (periodic.period, periodic.report_leader) == (11, False)
    flagger = build_agent("false_flagger", agent_spec, rng)
    assert (flagger.period, flagger.report_leader) == (0, True)
    bandit = build_agent("adaptive", agent_spec, rng)
    assert isinstance(bandit, BanditAgent)
    assert (bandit.exploration, bandit.step_size) == (0.1, 0.1)
    stub = _Stub(Action(violate=False))
    seat = build_agent("adaptive", agent_spec, rng, model=stub)
    assert isinstance(seat, LanguageModelSeat) and seat.model is stub
    assert isinstance(build_agent("compliant", agent_spec, rng, model=stub), Compliant)
    assert set(AGENT_TYPES) == {"compliant", "greedy", "adaptive", "periodic", "false_flagger"}


def test_build_agent_names_an_unknown_type(agent_spec):
    with pytest.raises(ValueError, match="'saboteur'"):
        build_agent("saboteur", agent_spec, np.random.default_rng(0))
