"""The workflow tests' shared ci-scale run."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import copy_repository, run


@pytest.fixture(scope="session")
def ci_run(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh copy of the repository after `snakemake --cores 2 all` at ci scale: made once
    per session (CI's 30 minutes) and compared against by the tests that rerun the workflow
    another way (forced, killed, on SLURM). Read it, or work in a `copy_run` of it."""
    repo = copy_repository(tmp_path_factory.mktemp("ci_run") / "repo")
    # Every study's ci jobs: about 12 minutes on a fast 2-core machine, over 15 on a slower one
    # (AMD EPYC, 2026-12-06); the limit is there to stop a hang, not to time the run.
    run(["snakemake", "--cores", "2", "all", "--config", "scale=ci"], repo, timeout=1800)
    return repo
