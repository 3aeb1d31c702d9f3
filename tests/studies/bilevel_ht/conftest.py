"""The study's params.yaml section, merged per scale as the workflow merges it, and a tiny
constructed bilevel problem (5 features, 3 nodes) for the math tests."""

from __future__ import annotations

import numpy as np
import pytest

from reprolab.studies.bilevel_ht.problem import NodeData
from tests.conftest import study_section


def section(scale: str) -> dict:
    """The bilevel_ht section of params.yaml at `scale`."""
    return study_section("bilevel_ht", scale)


@pytest.fixture(scope="session")
def ci_params() -> dict:
    """The ci-scale section."""
    return section("ci")


@pytest.fixture(scope="session")
def tiny() -> NodeData:
    """3 nodes x 6 train / 5 validation rows, 5 features, labels ±1; 7 test rows."""
    rng = np.random.default_rng(3)
    m, p = 3, 5

    def labelled(n: int) -> tuple[np.ndarray, np.ndarray]:
        a = rng.standard_normal((m, n, p))
        return a, np.where(a[..., 0] + 0.5 * rng.standard_normal((m, n)) > 0, 1.0, -1.0)

    (a_tr, b_tr), (a_va, b_va) = labelled(6), labelled(5)
    a_te = rng.standard_normal((7, p))
    return NodeData(a_tr, b_tr, a_va, b_va, a_te, np.where(a_te[:, 0] > 0, 1.0, -1.0))
