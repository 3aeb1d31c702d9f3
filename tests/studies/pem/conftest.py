"""The pem params section per scale (params.yaml once merged, else the study's fragment)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from reprolab.core.params import study_params

ROOT = Path(__file__).resolve().parents[3]
FRAGMENT = ROOT / "scratch" / "pem" / "params.yaml"
SCHEMA_FRAGMENT = ROOT / "scratch" / "pem" / "schema.yaml"


def section(scale: str) -> dict:
    """The pem section at `scale`, merged as the workflow merges it."""
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    if "pem" not in params:
        params = yaml.safe_load(FRAGMENT.read_text())
    return study_params({"scale": scale, **params}, "pem")


def schema() -> dict:
    """The schema of the merged pem section (no `scales:`), with the main schema's $defs."""
    main = yaml.safe_load((ROOT / "workflow/schemas/params.schema.yaml").read_text())
    if "pem" in main["properties"]:
        fragment = main["properties"]["pem"]
    else:
        fragment = yaml.safe_load(SCHEMA_FRAGMENT.read_text())["pem"]
    fragment["properties"].pop("scales")
    fragment["required"].remove("scales")
    return {"$defs": main["$defs"], **fragment}


@pytest.fixture(scope="session")
def ci_params() -> dict:
    """The ci-scale section."""
    return section("ci")
