"""What norm_enforcement's rule file and results need without importing torch: the rows, the
environments, which mechanisms are tuned, and the check of the study's params."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reprolab.studies.norm_enforcement.agents import AGENT_TYPES

ROWS = {
    "none": "None",
    "fixed_fine": "FixedFine",
    "report_sanction": "ReportSanction",
    "window_reputation": "WindowRep",
    "robust": "Robust",
    "robust_flat": "Robust, flat penalties",
    "robust_no_reliability": "Robust, no reliability",
}
"""Mechanism key → its row name, in table order (baselines, ours, its two ablations)."""
SIMPLE = ("fixed_fine", "report_sanction", "window_reputation")
"""The simple mechanisms the abstract says are exploited."""
ABLATIONS = ("robust_flat", "robust_no_reliability")
"""The robust mechanism's ablations: each should lose part of its robustness."""
ENVIRONMENTS = {"engagement": "Engagement", "fishery": "Fishery", "marketplace": "Marketplace"}
"""Environment key → its name in the table."""
BACKENDS = ("bandit", "language_model")
"""Who plays the adaptive seats: the smoke scale's bandit, or a local language model."""


def tuned_mechanisms(params: Mapping[str, Any]) -> list[str]:
    """The listed mechanisms with a fine to tune (all but `none`)."""
    return [m for m in params["methods"] if m != "none"]


def row_name(environment: str, mechanism: str) -> str:
    """The table's row of one mechanism in one environment."""
    return f"{ENVIRONMENTS[environment]} · {ROWS[mechanism]}"


def fine_limits(params: Mapping[str, Any]) -> dict[str, tuple[float, float]]:
    """The fine's domain, [0, max_fine]: an end of it is no grid edge (core.tuning)."""
    return {"fine": (0.0, float(params["enforcement"]["max_fine"]))}


def check_params(params: Mapping[str, Any]) -> None:
    """ValueError naming the key when norm_enforcement's params cannot run: an unknown
    mechanism, environment or agent type, a missing robust row, an environment without its
    section, a fine grid outside [0, max_fine], a population without both compliant and other
    agents (the exploitation gain compares the two), population mechanisms not in methods."""
    unknown = sorted(set(params["methods"]) - set(ROWS))
    if unknown:
        raise ValueError(f"norm_enforcement.methods: unknown {unknown}; expected {list(ROWS)}")
    if "robust" not in params["methods"]:
        raise ValueError("norm_enforcement.methods: list robust (the claims test it)")
    for environment in params["environments"]:
        if environment not in ENVIRONMENTS:
            raise ValueError(
                f"norm_enforcement.environments: unknown {environment!r}; "
                f"expected {list(ENVIRONMENTS)}"
            )
        if environment not in params["environment"]:
            raise ValueError(f"norm_enforcement.environment: no section for {environment!r}")
    grid = params["tune"]["grid"]["fine"]
    high = float(params["enforcement"]["max_fine"])
    outside = [f for f in grid if not 0 <= f <= high]
    if outside:
        raise ValueError(
            f"norm_enforcement.tune.grid.fine: {outside} outside [0, enforcement.max_fine = {high}]"
        )
    populations = {"population": params["population"], **params["populations"]}
    for name, population in populations.items():
        where = "norm_enforcement." + (
            "population" if name == "population" else f"populations.{name}"
        )
        bad = sorted(set(population) - set(AGENT_TYPES))
        if bad:
            raise ValueError(f"{where}: unknown agent types {bad}; expected {AGENT_TYPES}")
        others = sum(n for kind, n in population.items() if kind != "compliant")
        if population.get("compliant", 0) < 1 or others < 1:
            raise ValueError(f"{where}: needs compliant agents and at least one other agent")
    missing = sorted(set(params["population_mechanisms"]) - set(params["methods"]))
    if missing:
        raise ValueError(f"norm_enforcement.population_mechanisms: {missing} not in methods")
    agents = params["agents"]
    if agents["backend"] not in BACKENDS:
        raise ValueError(f"norm_enforcement.agents.backend: expected one of {BACKENDS}")
    if agents["backend"] == "language_model" and not agents["language_model"]["folder"]:
        raise ValueError(
            "norm_enforcement.agents.language_model.folder: the language_model backend needs "
            "a local model folder"
        )
