"""Shared fixtures of the norm-enforcement tests: params shaped like the blocks of params.yaml's
`norm_enforcement` section (`enforcement`, `environment`, `agents`, `perception`), with values of
their own, so that the tests do not move when the study's settings do."""

from __future__ import annotations

import pytest

from reprolab.studies.norm_enforcement.mechanisms import EnforcementParams

ENFORCEMENT_SECTION = {
    "budget": 2,
    "tpr": 0.7,
    "fpr": 0.05,
    "audit_cost": 0.1,
    "max_fine": 2.0,
    "suspension": 2,
    "window": 10,
    "window_threshold": 2,
    "escalation": 2.0,
    "suspend_after": 3,
    "confidence": 0.8,
    "report_weight": 0.5,
    "grid_points": 50,
    "prior": [1.0, 4.0],
    "decay": 0.98,
}
"""Shaped like params.yaml's `norm_enforcement.enforcement` block."""

BASE_FINE = 0.5
"""The mechanisms' base fine (tuned per environment in the study; one grid value here)."""

ENVIRONMENT_PARAMS = {
    "engagement": {
        "pool": 8.0,
        "gain": 0.5,
        "noise": 0.5,
        "temperature": 1.0,
        "quality_spread": 0.3,
        "trust_cost": 0.2,
    },
    "fishery": {
        "initial_stock": 80.0,
        "capacity": 100.0,
        "growth": 0.3,
        "quota": 0.8,
        "overharvest": 2.0,
        "price": 1.0,
    },
    "marketplace": {
        "demand": 8.0,
        "capacity": 2.0,
        "quality_spread": 0.3,
        "gain": 0.7,
        "margin": 1.0,
        "value": 1.0,
        "deception_cost": 1.0,
    },
}
"""Shaped like params.yaml's `norm_enforcement.environment` block."""


@pytest.fixture
def enforcement_section() -> dict:
    """A fresh copy of the enforcement block (tests may change it)."""
    return {**ENFORCEMENT_SECTION, "prior": list(ENFORCEMENT_SECTION["prior"])}


@pytest.fixture
def enforcement(enforcement_section) -> EnforcementParams:
    """The enforcement params with the base fine."""
    return EnforcementParams.from_params(enforcement_section, BASE_FINE)


@pytest.fixture
def make_enforcement(enforcement_section):
    """Build EnforcementParams with some keys changed: make_enforcement(tpr=1.0, fpr=0.0)."""

    def build(fine: float = BASE_FINE, **changes) -> EnforcementParams:
        return EnforcementParams.from_params({**enforcement_section, **changes}, fine)

    return build


@pytest.fixture
def environment_params() -> dict:
    """A fresh copy of the environment block: name → that environment's params."""
    return {name: dict(values) for name, values in ENVIRONMENT_PARAMS.items()}


@pytest.fixture
def agent_spec() -> dict:
    """Shaped like params.yaml's `norm_enforcement.agents` (what the bandit and periodic agents
    read)."""
    return {"exploration": 0.1, "step_size": 0.1, "period": 11}


@pytest.fixture
def perception() -> dict:
    """Shaped like params.yaml's `norm_enforcement.perception`."""
    return {"tpr": 0.5, "fpr": 0.01}
