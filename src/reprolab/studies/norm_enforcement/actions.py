"""What an agent sees and what it does: the one interface every agent and environment shares.

Each round every active agent gets an `Observation` and returns an `Action`: whether it breaks
the environment's norm this round, and whom (if anyone) it reports to the mechanism. The same
interface serves the bandit learners, the scripted agents and a language-model agent, which
reads the observation as text (`Observation.rules`, `Observation.norm` and the numbers).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Observation:
    """One agent's view of one round.

    round/rounds: this round (0-based) and the episode's length; agent: its index;
    environment: the environment's name; norm: one sentence saying what the norm forbids there;
    rules: the mechanism's published rules; state: the agent's private state (numbers named by
    the environment); payoffs: every agent's cumulative payoff so far [N] (the public
    leaderboard, fines already deducted); last_payoff: its own payoff in the previous round;
    fines: the fines it has paid so far; suspended: rounds of suspension left (0 = active);
    noticed: the agents it saw breaking the norm in the previous round (its own noisy
    perception, the only evidence it has for a report).
    """

    round: int
    rounds: int
    agent: int
    environment: str
    norm: str
    rules: str
    state: Mapping[str, float]
    payoffs: np.ndarray
    last_payoff: float
    fines: float
    suspended: int
    noticed: tuple[int, ...] = ()


@dataclass(frozen=True)
class Action:
    """violate: break the norm this round; report: the agent reported as a violator, or None."""

    violate: bool
    report: int | None = None
