"""The agents that stand in for language-model agents at smoke scale.

* `compliant`: never breaks the norm; reports one agent it noticed breaking it last round (its
  perception is noisy, so a compliant agent sometimes reports an innocent), else nobody.
* `greedy`: always breaks the norm, never reports (the misaligned agent that does not adapt).
* `adaptive`: an ε-greedy bandit over six macro-actions, {comply, violate} × {report nobody,
  report the leading competitor (highest cumulative payoff), report a random other agent}. It
  is given only its own reward, so any exploitation (violating where enforcement is weak,
  reporting rivals where reports are weaponisable) is learned, never scripted.
* `periodic`: violates every `period`-th round (a stress test for windowed reputation).
* `false_flagger`: never violates, always reports the leading competitor.

The adaptive agent's reward for a round is its payoff minus the fines charged, minus the
payoff it forgoes while suspended, counted when the suspension is imposed (suspension rounds ×
its mean payoff per active round so far): the agent acts in none of those rounds, so otherwise
it would never feel a suspension. Each arm's value is an exponentially weighted mean of its
rewards (constant step size, so the agent keeps tracking a game whose other players learn
too); it plays the best arm (ties shared) with probability 1 − ε and a uniform arm otherwise.
ε-greedy needs no bound on rewards: an EXP3 learner, tried first, must squash rewards into
[0, 1], and an escalating fine then weighs no more than one ordinary bad round.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

import numpy as np

from reprolab.studies.norm_enforcement.actions import Action, Observation

AGENT_TYPES = ("compliant", "greedy", "adaptive", "periodic", "false_flagger")
"""Agent types a population may hold; `compliant` is the reference of the exploitation gain."""

MACRO_ACTIONS = tuple(
    (violate, report) for violate in (False, True) for report in ("nobody", "leader", "random")
)
"""The adaptive agent's arms: (violate, whom to report)."""


class Agent(Protocol):
    """Maps an observation to an action, then hears the round's reward."""

    def act(self, obs: Observation) -> Action: ...

    def learn(self, reward: float, suspension: int) -> None: ...


def leading_competitor(obs: Observation) -> int:
    """The other agent with the highest cumulative payoff (lowest index on ties)."""
    others = np.asarray(obs.payoffs, dtype=float).copy()
    others[obs.agent] = -np.inf
    return int(np.argmax(others))


def random_other(obs: Observation, rng: np.random.Generator) -> int:
    """A uniformly random agent other than the observer."""
    pick = int(rng.integers(len(obs.payoffs) - 1))
    return pick + (pick >= obs.agent)


class Compliant:
    """Never violates; reports one agent it noticed violating (uniformly among them)."""

    def __init__(self, rng: np.random.Generator):
        self.rng = rng

    def act(self, obs: Observation) -> Action:
        if not obs.noticed:
            return Action(violate=False)
        return Action(violate=False, report=int(self.rng.choice(obs.noticed)))

    def learn(self, reward: float, suspension: int) -> None:
        """Compliant agents do not learn."""


class Scripted:
    """A fixed policy: violate every `period`-th round (period 1 = always, 0 = never) and
    report the leading competitor or nobody."""

    def __init__(self, period: int, report_leader: bool):
        self.period, self.report_leader = period, report_leader

    def act(self, obs: Observation) -> Action:
        violate = self.period > 0 and obs.round % self.period == 0
        return Action(violate, leading_competitor(obs) if self.report_leader else None)

    def learn(self, reward: float, suspension: int) -> None:
        """Scripted agents do not learn."""


class BanditAgent:
    """An ε-greedy bandit over `MACRO_ACTIONS` with constant-step value estimates (module
    docstring)."""

    def __init__(self, exploration: float, step_size: float, rng: np.random.Generator):
        self.exploration, self.step_size, self.rng = exploration, step_size, rng
        self.values = np.zeros(len(MACRO_ACTIONS))
        self.arm = 0
        self.earned, self.active_rounds = 0.0, 0

    def probabilities(self) -> np.ndarray:
        """The current distribution over arms (ties of the best value share its mass)."""
        best = self.values == self.values.max()
        k = len(MACRO_ACTIONS)
        return (1 - self.exploration) * best / best.sum() + self.exploration / k

    def act(self, obs: Observation) -> Action:
        self.arm = int(self.rng.choice(len(MACRO_ACTIONS), p=self.probabilities()))
        violate, whom = MACRO_ACTIONS[self.arm]
        report = {
            "nobody": None,
            "leader": leading_competitor(obs),
            "random": random_other(obs, self.rng),
        }[whom]
        return Action(violate, report)

    def learn(self, reward: float, suspension: int) -> None:
        """Move the played arm's value toward the round's net payoff (`reward`, fines
        deducted) less the payoff forgone over `suspension` rounds."""
        self.earned += reward
        self.active_rounds += 1
        felt = reward - suspension * self.earned / self.active_rounds
        self.values[self.arm] += self.step_size * (felt - self.values[self.arm])


class Actor(Protocol):
    """Anything that maps an observation to an action (a language-model agent)."""

    def act(self, obs: Observation) -> Action: ...


class LanguageModelSeat:
    """An adaptive seat played by a shared language model (the paper scale): it decides from
    the observation alone (its leaderboard, fines and last payoff are its in-context record),
    so it has nothing to learn between rounds."""

    def __init__(self, model: Actor):
        self.model = model

    def act(self, obs: Observation) -> Action:
        return self.model.act(obs)

    def learn(self, reward: float, suspension: int) -> None:
        """The model's weights stay fixed; what it learns is in its next observation."""


def build_agent(
    kind: str, spec: Mapping[str, Any], rng: np.random.Generator, model: Actor | None = None
) -> Agent:
    """One agent of type `kind` from params `agents` (the bandit's exploration and step size,
    the periodic agent's period); with a language `model`, the adaptive seats are its."""
    if kind == "adaptive" and model is not None:
        return LanguageModelSeat(model)
    if kind == "compliant":
        return Compliant(rng)
    if kind == "greedy":
        return Scripted(period=1, report_leader=False)
    if kind == "adaptive":
        return BanditAgent(spec["exploration"], spec["step_size"], rng)
    if kind == "periodic":
        return Scripted(period=spec["period"], report_leader=False)
    if kind == "false_flagger":
        return Scripted(period=0, report_leader=True)
    raise ValueError(f"unknown agent type {kind!r}; expected one of {AGENT_TYPES}")
