"""The paper-scale data as declared inputs: a dry run on the cluster profile, in a fresh copy of
the repository, stops without the data and names it (with the data it plans every job:
tests/workflow/test_cluster.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from reprolab.core.paper_data import declared_inputs
from reprolab.core.params import load_yaml
from tests.conftest import run

pytestmark = pytest.mark.integration
SLURM_DRY_RUN = ["snakemake", "--profile", "slurm", "-n", "all"]


def test_slurm_dry_run_without_data_names_each_missing_input(repo_copy: Path):
    config = {**load_yaml(repo_copy / "params.yaml"), "scale": "paper"}
    paths = {item.path for item in declared_inputs(config)}
    result = run(SLURM_DRY_RUN, repo_copy, check=False)
    assert result.returncode != 0
    # Snakemake names the missing files of the first job it cannot build ...
    assert "MissingInputException" in result.stdout + result.stderr
    # ... and the workflow, once, every missing declared input with how to obtain it
    assert result.stderr.count("Paper-scale data missing") == 1
    assert f"{len(paths)} of {len(paths)} declared inputs" in result.stderr
    assert all(f"MISSING  {path}\n" in result.stderr for path in paths)
    assert "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz" in result.stderr
