"""The icl_manifold parameters at a scale, merged as the workflow merges them.

They come from params.yaml's `icl_manifold` section.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import study_section


def icl_params(scale: str) -> dict[str, Any]:
    """The study's section of params at `scale`."""
    return study_section("icl_manifold", scale)


@pytest.fixture(scope="session")
def ci_params() -> dict[str, Any]:
    """The ci-scale parameters."""
    return icl_params("ci")
