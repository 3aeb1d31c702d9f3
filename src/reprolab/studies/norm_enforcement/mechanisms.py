"""Enforcement mechanisms: who is audited each round, and what a detected violation costs.

Every mechanism sees only what an enforcer could: the reports agents filed and the outcomes of
its own audits (a `Detector` with a true- and a false-positive rate); the true violations are
passed in only so the detector can be simulated. An audit costs `audit_cost`; at most `budget`
agents are audited per round. Sanctions are fines (paid at once) and suspensions (the agent
sits out the next rounds: no payoff, no action).

* `none`: nobody is audited or sanctioned.
* `fixed_fine`: `budget` active agents audited uniformly at random; a detection costs `fine`.
* `report_sanction`: the most-reported active agents are audited (ties broken at random; the
  budget is left unused when fewer are reported); a detection costs `fine` and `suspension`
  rounds. Reports are free, so a report is a way to get a competitor audited.
* `window_reputation`: random audits as `fixed_fine`; an agent with `window_threshold`
  detections within the last `window` rounds pays `fine`, is suspended, and its window clears.
* `robust` (the paper's two ingredients; the concrete form is ours): a `RatePosterior` over each
  agent's violation rate and one over each agent's false-report rate. Audits: `budget` − 1 go
  to the highest priority — a Thompson draw of the violation rate plus `report_weight` × the
  reports against the agent, each weighted by its reporter's credibility (1 − posterior
  false-report rate) — and one to a uniformly random other active agent, so nobody is safe
  from audit. A detection is confirmed only when P(violated | detected) under the agent's
  posterior exceeds `confidence`; an undetected audit confirms a false report against that
  agent when P(report false | not detected) under the reporter's posterior exceeds
  `confidence`. Each confirmation adds one to the agent's record n, which fades by `decay`
  each round like the estimates (n ← decay·n + confirmed, so a record of one offence per
  1/(1 − decay) rounds stays bounded); a confirmation costs fine·escalation^(n−1), at most
  `max_fine` (the largest single fine any mechanism may charge), and once n ≥ `suspend_after`
  also `suspension` rounds.
* `robust_flat` (ablation: no escalation): the same estimates and confirmations, but every
  confirmation costs the baselines' flat penalty (`fine` and `suspension` rounds).
* `robust_no_reliability` (ablation): no estimates: audits go to the most-reported agents
  plus one random one, every detection is confirmed, false reports are never confirmed; the
  escalating penalties are kept.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from reprolab.core.params import dataclass_values
from reprolab.studies.norm_enforcement.reliability import Detector, RatePosterior

MECHANISMS = (
    "none",
    "fixed_fine",
    "report_sanction",
    "window_reputation",
    "robust",
    "robust_flat",
    "robust_no_reliability",
)
"""The table's mechanism rows, baselines first, then ours and its two ablations."""


@dataclass(frozen=True)
class EnforcementParams:
    """params `enforcement` (module docstring); prior is the Beta prior's two shape values;
    `fine` is the base fine (each mechanism's is tuned per environment, at most `max_fine`)."""

    budget: int
    tpr: float
    fpr: float
    audit_cost: float
    fine: float
    max_fine: float
    suspension: int
    window: int
    window_threshold: int
    escalation: float
    suspend_after: int
    confidence: float
    report_weight: float
    grid_points: int
    prior: tuple[float, float]
    decay: float

    @classmethod
    def from_params(cls, section: Mapping[str, Any], fine: float) -> EnforcementParams:
        """Build from params `enforcement` and the mechanism's base `fine` (tuned), naming a
        missing key."""
        where = "params norm_enforcement.enforcement"
        values = dataclass_values(cls, section, where, exclude=("fine",))
        values["prior"] = tuple(values["prior"])
        return cls(fine=float(fine), **values)

    @property
    def detector(self) -> Detector:
        return Detector(self.tpr, self.fpr)


@dataclass(frozen=True)
class Verdict:
    """One round of enforcement, [N] arrays: audited, detected (the detector fired), fines
    charged, suspension rounds imposed, confirmed (a violation or false report confirmed);
    belief: the mechanism's posterior mean violation rate per agent (NaN where it keeps none)."""

    audited: np.ndarray
    detected: np.ndarray
    fines: np.ndarray
    suspension: np.ndarray
    confirmed: np.ndarray
    belief: np.ndarray


def ranked_audits(
    priority: np.ndarray, eligible: np.ndarray, count: int, rng: np.random.Generator
) -> np.ndarray:
    """[N] bool: the `count` eligible agents of highest priority, ties broken by one uniform
    draw per agent (drawn whatever the priorities, so the stream does not depend on them)."""
    tiebreak = rng.random(priority.shape[0])
    order = np.lexsort((tiebreak, -priority))
    chosen = [i for i in order if eligible[i]][:count]
    audited = np.zeros(priority.shape[0], dtype=bool)
    audited[chosen] = True
    return audited


def random_audits(eligible: np.ndarray, count: int, rng: np.random.Generator) -> np.ndarray:
    """[N] bool: `count` eligible agents drawn uniformly without replacement."""
    return ranked_audits(np.zeros(eligible.shape[0]), eligible, count, rng)


class Mechanism:
    """The rules and state of one mechanism for one episode (module docstring)."""

    def __init__(self, name: str, params: EnforcementParams, agents: int):
        if name not in MECHANISMS:
            raise ValueError(f"unknown mechanism {name!r}; expected one of {MECHANISMS}")
        self.name, self.params, self.agents = name, params, agents
        self.confirmations = np.zeros(agents)
        self.detections: list[np.ndarray] = []
        estimates = name in ("robust", "robust_flat")
        self.violation_rate = self._posterior() if estimates else None
        self.false_report_rate = self._posterior() if estimates else None

    def _posterior(self) -> RatePosterior:
        p = self.params
        return RatePosterior(self.agents, p.grid_points, p.prior, p.decay)

    @property
    def rules(self) -> str:
        """The mechanism's published rules, in words an agent (or a language model) reads."""
        p = self.params
        if self.name == "none":
            return "Nobody audits or sanctions."
        audit = f"Each round up to {p.budget} agents are audited; an audit is imperfect."
        if self.name == "fixed_fine":
            return f"{audit} Audits are random. A detected violation costs a fine of {p.fine}."
        if self.name == "report_sanction":
            return (
                f"{audit} The most-reported agents are audited; any agent may report another. "
                f"A detected violation costs {p.fine} and {p.suspension} rounds of suspension."
            )
        if self.name == "window_reputation":
            return (
                f"{audit} Audits are random. {p.window_threshold} detected violations within "
                f"{p.window} rounds cost {p.fine} and {p.suspension} rounds of suspension."
            )
        penalties = (
            f"starting at {p.fine:g} and growing {p.escalation:g}-fold per repeat offence up to "
            f"{p.max_fine:g}, with {p.suspension} rounds of suspension once an agent's recent "
            f"record reaches {p.suspend_after:g} offences"
            if self.name != "robust_flat"
            else f"{p.fine:g} and {p.suspension} rounds of suspension each time"
        )
        if self.name == "robust_no_reliability":
            return (
                f"{audit} The most-reported agents are audited, plus one at random; any agent "
                f"may report another. Detected violations are penalised, {penalties}."
            )
        return (
            f"{audit} Audits follow each agent's estimated record and credible reports, plus "
            "one at random; any agent may report another. Confirmed violations and confirmed "
            f"false reports are penalised, {penalties}."
        )

    def step(
        self,
        violations: np.ndarray,
        reports: np.ndarray,
        active: np.ndarray,
        rng: np.random.Generator,
    ) -> Verdict:
        """Enforce one round. violations [N] bool: the conduct an audit can find (only for the
        detector; simulation.EpisodeLog.conduct), reports [N,N] bool (reports[j, i]: j reported
        i), active [N] bool."""
        n = self.agents
        zeros = np.zeros(n)
        no = np.zeros(n, dtype=bool)
        if self.name == "none":
            return Verdict(no, no, zeros, np.zeros(n, dtype=int), no, np.full(n, np.nan))
        if self.name in ("robust", "robust_flat"):
            return self._robust(violations, reports, active, rng)
        p = self.params
        if self.name in ("fixed_fine", "window_reputation"):
            audited = random_audits(active, p.budget, rng)
        elif self.name == "report_sanction":
            received = reports.sum(axis=0).astype(float)
            audited = ranked_audits(received, active & (received > 0), p.budget, rng)
        else:  # robust_no_reliability
            received = reports.sum(axis=0).astype(float)
            audited = ranked_audits(received, active & (received > 0), p.budget - 1, rng)
            audited |= random_audits(active & ~audited, 1, rng)
        detected = p.detector.audit(violations, audited, rng)
        confirmed = self._confirm_baseline(detected)
        return self._penalise(audited, detected, confirmed, np.full(n, np.nan))

    def _confirm_baseline(self, detected: np.ndarray) -> np.ndarray:
        """Which detections a baseline (or the no-reliability ablation) sanctions."""
        if self.name != "window_reputation":
            return detected.copy()
        p = self.params
        self.detections = [*self.detections, detected][-p.window :]
        confirmed = np.sum(self.detections, axis=0) >= p.window_threshold
        self.detections = [d & ~confirmed for d in self.detections]
        return confirmed

    def _robust(
        self,
        violations: np.ndarray,
        reports: np.ndarray,
        active: np.ndarray,
        rng: np.random.Generator,
    ) -> Verdict:
        """The robust mechanism and its flat-penalty ablation (module docstring)."""
        p, detector = self.params, self.params.detector
        assert self.violation_rate is not None and self.false_report_rate is not None
        rate = self.violation_rate.mean()
        false_rate = self.false_report_rate.mean()
        credibility = 1.0 - false_rate
        weighted_reports = (reports * credibility[:, None]).sum(axis=0)
        priority = self.violation_rate.sample(rng) + p.report_weight * weighted_reports
        audited = ranked_audits(priority, active, p.budget - 1, rng)
        audited |= random_audits(active & ~audited, 1, rng)
        detected = detector.audit(violations, audited, rng)
        confirmed = np.zeros(self.agents, dtype=bool)
        for i in np.flatnonzero(audited):
            fired = bool(detected[i])
            if fired and detector.violated_given(True, rate[i]) > p.confidence:
                confirmed[i] = True
            self.violation_rate.observe(i, fired, p.tpr, p.fpr)
            for j in np.flatnonzero(reports[:, i]):
                false_given = 1.0 - detector.violated_given(fired, 1.0 - false_rate[j])
                if not fired and false_given > p.confidence:
                    confirmed[j] = True
                self.false_report_rate.observe(j, fired, p.fpr, p.tpr)
        self.violation_rate.forget()
        self.false_report_rate.forget()
        return self._penalise(audited, detected, confirmed, self.violation_rate.mean())

    def _penalise(
        self,
        audited: np.ndarray,
        detected: np.ndarray,
        confirmed: np.ndarray,
        belief: np.ndarray,
    ) -> Verdict:
        """Fines and suspensions for this round's confirmations, by the mechanism's schedule."""
        p = self.params
        self.confirmations = p.decay * self.confirmations + confirmed
        if self.name in ("robust", "robust_no_reliability"):
            escalated = p.fine * p.escalation ** (self.confirmations - 1)
            fines = np.where(confirmed, np.minimum(escalated, p.max_fine), 0.0)
            suspend = confirmed & (self.confirmations >= p.suspend_after)
        else:
            fines = np.where(confirmed, p.fine, 0.0)
            suspend = confirmed & (self.name != "fixed_fine")
        suspension = np.where(suspend, p.suspension, 0)
        return Verdict(audited, detected, fines, suspension, confirmed, belief)
