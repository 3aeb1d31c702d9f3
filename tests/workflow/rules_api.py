"""The workflow's rules as Snakemake loads them (its Python API, in a child process), for the
tests that check every rule: the study contract and the cluster profile."""

from __future__ import annotations

import json
import subprocess
import sys
from functools import cache

from tests.conftest import ROOT

_RULES_SCRIPT = """
import json, sys
from pathlib import Path
from snakemake.api import SnakemakeApi
from snakemake.settings.types import (
    ConfigSettings, OutputSettings, ResourceSettings, StorageSettings,
)
with SnakemakeApi(OutputSettings()) as api:
    workflow = api.workflow(
        resource_settings=ResourceSettings(),
        config_settings=ConfigSettings(config={"scale": "paper"}),
        storage_settings=StorageSettings(),
        snakefile=Path("Snakefile"),
        workdir=Path("."),
    )._workflow
    rules = {
        rule.name: {
            "job": bool(rule.output),
            "local": rule.name in workflow._localrules,
            "resources": sorted(k for k in rule.resources if not k.startswith("_")),
            "threads": rule.resources.get("_cores") is not None,
            "inputs": [str(f) for f in rule.input if isinstance(f, str)],
            "outputs": [str(f) for f in rule.output],
        }
        for rule in workflow.rules
    }
sys.stdout.write("RULES" + json.dumps(rules))
"""


@cache
def paper_scale_rules() -> dict[str, dict]:
    """Every rule of the workflow loaded at paper scale, by name: is it a job (has outputs), does
    it run in Snakemake's own process (`localrule: True`), its resources, inputs and outputs."""
    result = subprocess.run(
        [sys.executable, "-c", _RULES_SCRIPT], cwd=ROOT, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.split("RULES", 1)[1])
