"""The table's columns, computed from one episode's log.

* violation_rate: violations per active agent-round (all agents).
* exploitation_gain: mean total net payoff (environment payoff − fines) of the non-compliant
  agents minus that of the compliant agents; > 0 means breaking the norm (or weaponising the
  mechanism) pays. Net payoffs are per round (divided by T) so the scales of environments
  compare.
* false_sanction_rate: confirmed sanctions of compliant agents per compliant active round.
* compliant_suspended: the share of compliant agents suspended at least once.
* enforcement_cost (per round): audit_cost × audits + fines charged to compliant agents + the
  payoff compliant agents forgo while suspended (each one's mean payoff per active round ×
  its suspended rounds).
* welfare (per round): the environment's own welfare (fines are transfers, not losses).
* false_report_share: the share of the non-compliant agents' reports that named an agent who
  violated neither that round nor the previous one (how much reporting is weaponised).

Beside the columns, for the claims: compliant_payoff and other_payoff (the two means whose
difference is the gain) and false_reports_first / false_reports_last (false reports per active
round of the non-compliant agents in the first and the last quarter of the episode: whether
they learned to file them). `trajectories` gives the report's curves per window of rounds.
"""

from __future__ import annotations

import numpy as np

from reprolab.studies.norm_enforcement.agents import AGENT_TYPES
from reprolab.studies.norm_enforcement.simulation import EpisodeLog

COLUMNS = (
    "violation_rate",
    "exploitation_gain",
    "false_sanction_rate",
    "compliant_suspended",
    "enforcement_cost",
    "welfare",
    "false_report_share",
)


def false_reports(log: EpisodeLog) -> np.ndarray:
    """[T, N] bool: the agent filed a report that round naming an agent who violated neither
    that round nor the round before (a report rests on what the reporter noticed in the
    previous round, simulation's module docstring)."""
    filed = log.reports >= 0
    targets = np.where(filed, log.reports, 0).astype(np.intp)
    recent = log.violated.copy()
    recent[1:] |= log.violated[:-1]
    return filed & ~np.take_along_axis(recent, targets, axis=1)


def episode_metrics(log: EpisodeLog, audit_cost: float) -> dict[str, float]:
    """The `COLUMNS` of one episode and the claims' extra numbers (module docstring)."""
    rounds = log.active.shape[0]
    compliant = np.array([k == "compliant" for k in log.kinds])
    others = ~compliant
    net = (log.payoffs - log.fines).sum(axis=0) / rounds
    compliant_payoff = float(net[compliant].mean()) if compliant.any() else float("nan")
    other_payoff = float(net[others].mean()) if others.any() else float("nan")
    active_rounds = np.maximum(log.active.sum(axis=0), 1)
    mean_payoff = log.payoffs.sum(axis=0) / active_rounds
    lost = (mean_payoff * (~log.active).sum(axis=0))[compliant].sum()
    cost = audit_cost * log.audited.sum() + log.fines[:, compliant].sum() + lost
    false = false_reports(log)[:, others]
    filed = (log.reports[:, others] >= 0).sum()
    quarter = max(rounds // 4, 1)
    return {
        "violation_rate": float(log.violated.sum() / log.active.sum()),
        "exploitation_gain": other_payoff - compliant_payoff,
        "false_sanction_rate": float(
            log.confirmed[:, compliant].sum() / max(log.active[:, compliant].sum(), 1)
        ),
        "compliant_suspended": float((log.suspension[:, compliant] > 0).any(axis=0).mean())
        if compliant.any()
        else float("nan"),
        "enforcement_cost": float(cost / rounds),
        "welfare": float(log.welfare.mean()),
        "false_report_share": float(false.sum() / max(filed, 1)),
        "compliant_payoff": compliant_payoff,
        "other_payoff": other_payoff,
        "false_reports_first": _rate(false[:quarter], log.active[:quarter, others]),
        "false_reports_last": _rate(false[-quarter:], log.active[-quarter:, others]),
    }


def _rate(events: np.ndarray, active: np.ndarray) -> float:
    """Events per active agent-round (NaN with no active round)."""
    return float(events.sum() / active.sum()) if active.any() else float("nan")


def trajectories(log: EpisodeLog, windows: int) -> dict[str, dict[str, list[float]]]:
    """The report's curves over `windows` equal windows of rounds, per agent type present:
    payoff (mean cumulative net payoff per agent at each window's end), sanctions (confirmed
    sanctions per agent within each window) and false_reports (false reports per active round
    within each window)."""
    rounds = log.active.shape[0]
    ends = np.linspace(0, rounds, windows + 1).astype(int)[1:]
    cumulative = np.cumsum(log.payoffs - log.fines, axis=0)
    false = false_reports(log)
    out: dict[str, dict[str, list[float]]] = {"payoff": {}, "sanctions": {}, "false_reports": {}}
    kinds = np.array(log.kinds)
    for kind in (k for k in AGENT_TYPES if k in log.kinds):
        agents = kinds == kind
        out["payoff"][kind] = cumulative[ends - 1][:, agents].mean(axis=1).tolist()
        starts = np.concatenate([[0], ends[:-1]])
        out["sanctions"][kind] = [
            float(log.confirmed[a:b, agents].sum() / agents.sum())
            for a, b in zip(starts, ends, strict=True)
        ]
        out["false_reports"][kind] = [
            _rate(false[a:b, agents], log.active[a:b, agents])
            for a, b in zip(starts, ends, strict=True)
        ]
    return out
