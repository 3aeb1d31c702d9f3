"""The pem params section per scale, from the shared params.yaml."""

from __future__ import annotations

import pytest

from tests.conftest import study_section


def section(scale: str) -> dict:
    """The pem section at `scale`, merged as the workflow merges it."""
    return study_section("pem", scale)


@pytest.fixture(scope="session")
def ci_params() -> dict:
    """The ci-scale section."""
    return section("ci")
