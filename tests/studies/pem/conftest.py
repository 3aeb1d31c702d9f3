"""The pem params section per scale and its schema, from the shared params.yaml and schema."""

from __future__ import annotations

import pytest

from tests.conftest import section_schema, study_section


def section(scale: str) -> dict:
    """The pem section at `scale`, merged as the workflow merges it."""
    return study_section("pem", scale)


def schema() -> dict:
    """The schema of the merged pem section."""
    return section_schema("pem")


@pytest.fixture(scope="session")
def ci_params() -> dict:
    """The ci-scale section."""
    return section("ci")
