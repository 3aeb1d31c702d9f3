"""One episode: a population of agents in one environment under one mechanism.

Each round every active agent observes (`Observation`) and acts (`Action`); the environment
pays them; the mechanism audits and sanctions; each agent hears its net payoff; then every
agent perceives, noisily, who broke the norm (its next observation's `noticed`: a violation
is noticed with probability `perception.tpr`, an innocent agent with `perception.fpr`).
A suspension imposed in round t covers rounds t+1 … t+s.

What an audit examines: an agent's conduct still open to sanction, its violation this round or
its violation of the previous round that no sanction has yet answered (`EpisodeLog.conduct`).
Reports are filed on what the reporter noticed in the previous round, so an audit they trigger
must be able to find that violation; and since a confirmed sanction closes what it answered,
no violation is punished twice.

Random streams are spawned from the episode's seed, one each for the environment, the
mechanism, perception and every agent, so adding an agent or changing one agent's draws leaves
the others' streams alone.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from reprolab.studies.norm_enforcement.actions import Observation
from reprolab.studies.norm_enforcement.agents import AGENT_TYPES, Actor, Agent, build_agent
from reprolab.studies.norm_enforcement.environments import Environment
from reprolab.studies.norm_enforcement.mechanisms import EnforcementParams, Mechanism


@dataclass(frozen=True)
class EpisodeLog:
    """Everything that happened, [T, N] per agent and round unless said: kinds (N agent
    types), active, violated, conduct (what an audit could find: a violation this round or an
    unanswered one of the previous round), reports (the agent reported, −1 for nobody; int16),
    payoffs (the environment's, before fines), fines, suspension (rounds imposed), audited,
    detected, confirmed, belief (the mechanism's posterior mean violation rate, NaN where it keeps
    none), welfare [T]."""

    kinds: tuple[str, ...]
    active: np.ndarray
    violated: np.ndarray
    conduct: np.ndarray
    reports: np.ndarray
    payoffs: np.ndarray
    fines: np.ndarray
    suspension: np.ndarray
    audited: np.ndarray
    detected: np.ndarray
    confirmed: np.ndarray
    belief: np.ndarray
    welfare: np.ndarray


def population_kinds(population: Mapping[str, int]) -> tuple[str, ...]:
    """The agent types of a population (type → count), in `AGENT_TYPES` order."""
    unknown = set(population) - set(AGENT_TYPES)
    if unknown:
        raise ValueError(f"unknown agent types {sorted(unknown)}; expected {AGENT_TYPES}")
    return tuple(kind for kind in AGENT_TYPES for _ in range(population.get(kind, 0)))


def _perceive(
    violated: np.ndarray, active: np.ndarray, perception: Mapping[str, float], rng
) -> list[tuple[int, ...]]:
    """Whom each agent noticed breaking the norm this round (only active agents are seen)."""
    n = violated.shape[0]
    chance = np.where(violated, perception["tpr"], perception["fpr"])
    seen = (rng.random((n, n)) < chance[None, :]) & active[None, :] & ~np.eye(n, dtype=bool)
    return [tuple(int(j) for j in np.flatnonzero(row)) for row in seen]


def run_episode(
    environment: Environment,
    mechanism: str,
    enforcement: EnforcementParams,
    population: Mapping[str, int],
    agent_spec: Mapping[str, Any],
    perception: Mapping[str, float],
    rounds: int,
    seed: int,
    model: Actor | None = None,
) -> EpisodeLog:
    """Play `rounds` rounds and return the log (module docstring); a language `model`, when
    given, plays the adaptive seats."""
    kinds = population_kinds(population)
    n = len(kinds)
    env_rng, mech_rng, perception_rng, *agent_rngs = (
        np.random.default_rng(s) for s in np.random.SeedSequence(seed).spawn(3 + n)
    )
    environment.reset(n, env_rng)
    enforcer = Mechanism(mechanism, enforcement, n)
    agents: list[Agent] = [
        build_agent(k, agent_spec, r, model) for k, r in zip(kinds, agent_rngs, strict=True)
    ]
    log = {
        name: np.zeros((rounds, n), dtype=dtype)
        for name, dtype in [
            ("active", bool),
            ("violated", bool),
            ("conduct", bool),
            ("payoffs", float),
            ("fines", float),
            ("suspension", np.int32),
            ("audited", bool),
            ("detected", bool),
            ("confirmed", bool),
            ("belief", float),
        ]
    }
    log["reports"] = np.full((rounds, n), -1, dtype=np.int16)
    welfare = np.zeros(rounds)
    suspended_left = np.zeros(n, dtype=int)
    earned = np.zeros(n)
    last = np.zeros(n)
    fined = np.zeros(n)
    noticed: list[tuple[int, ...]] = [()] * n
    unanswered = np.zeros(n, dtype=bool)
    for t in range(rounds):
        active = suspended_left == 0
        violate = np.zeros(n, dtype=bool)
        reports = np.zeros((n, n), dtype=bool)
        for i in np.flatnonzero(active):
            obs = Observation(
                round=t,
                rounds=rounds,
                agent=int(i),
                environment=environment.name,
                norm=environment.norm,
                rules=enforcer.rules,
                state=environment.private_state(int(i)),
                payoffs=earned.copy(),
                last_payoff=float(last[i]),
                fines=float(fined[i]),
                suspended=0,
                noticed=noticed[i],
            )
            action = agents[i].act(obs)
            violate[i] = action.violate
            if action.report is not None:
                reports[i, action.report] = True
                log["reports"][t, i] = action.report
        outcome = environment.step(violate, active, env_rng)
        conduct = outcome.violations | unanswered
        verdict = enforcer.step(conduct, reports, active, mech_rng)
        unanswered = outcome.violations & ~verdict.confirmed
        net = outcome.payoffs - verdict.fines
        for i in np.flatnonzero(active):
            agents[i].learn(float(net[i]), int(verdict.suspension[i]))
        suspended_left = np.maximum(suspended_left - 1, 0) + verdict.suspension
        noticed = _perceive(outcome.violations, active, perception, perception_rng)
        earned += net
        fined += verdict.fines
        last = np.where(active, net, 0.0)
        for name, value in [
            ("active", active),
            ("violated", outcome.violations),
            ("conduct", conduct),
            ("payoffs", outcome.payoffs),
            ("fines", verdict.fines),
            ("suspension", verdict.suspension),
            ("audited", verdict.audited),
            ("detected", verdict.detected),
            ("confirmed", verdict.confirmed),
            ("belief", verdict.belief),
        ]:
            log[name][t] = value
        welfare[t] = outcome.welfare
    return EpisodeLog(kinds=kinds, welfare=welfare, **log)
