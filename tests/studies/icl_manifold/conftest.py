"""The icl_manifold parameters at a scale, merged as the workflow merges them.

They come from params.yaml once its `icl_manifold` section exists, else from the study's
fragment in scratch/ (before the section is merged into the shared file).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reprolab.core.params import load_yaml, study_params

ROOT = Path(__file__).resolve().parents[3]


def icl_params(scale: str) -> dict[str, Any]:
    """The study's section of params at `scale`."""
    config = load_yaml(ROOT / "params.yaml")
    if "icl_manifold" not in config:
        config = load_yaml(ROOT / "scratch/icl_manifold/params.yaml")
    return study_params({**config, "scale": scale}, "icl_manifold")


@pytest.fixture(scope="session")
def ci_params() -> dict[str, Any]:
    """The ci-scale parameters."""
    return icl_params("ci")
