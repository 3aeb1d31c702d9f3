"""The study's params fragment, merged per scale as the workflow merges params.yaml, and a tiny
constructed bilevel problem (5 features, 3 nodes) for the math tests."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import yaml

from reprolab.core.params import study_params
from reprolab.studies.bilevel_ht.problem import NodeData

ROOT = Path(__file__).resolve().parents[3]
FRAGMENT = ROOT / "scratch" / "bilevel_ht" / "params.yaml"
SCHEMA = ROOT / "scratch" / "bilevel_ht" / "schema.yaml"


def section(scale: str) -> dict:
    """The bilevel_ht section at `scale`: from params.yaml once merged, else the fragment."""
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    if "bilevel_ht" not in params:
        params = yaml.safe_load(FRAGMENT.read_text())
    return study_params({"scale": scale, **params}, "bilevel_ht")


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
