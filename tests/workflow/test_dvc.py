"""DVC drives the same workflow: repro, status, checkout, and the committed smoke-scale lock."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from tests.conftest import run

pytestmark = pytest.mark.integration
DETERMINISTIC = (
    "results/ndfa/runs",
    "results/ndfa/table.csv",
    "results/ndfa/table.md",
    "results/ndfa/table.tex",
    "results/ndfa/claims.json",
    "results/ndfa/metrics.json",
    "data/ndfa",
    "results/ssg/table.csv",
    "results/ssg/table.md",
    "results/ssg/table.tex",
    "results/ssg/claims.json",
    "results/ssg/metrics.json",
    "data/raw/wsi",
    "data/wsi",
    "results/visual_queries/runs",
    "results/visual_queries/table.csv",
    "results/visual_queries/table.md",
    "results/visual_queries/table.tex",
    "results/visual_queries/claims.json",
    "results/visual_queries/metrics.json",
    "data/raw/video",
    "data/video",
    "data/visual_queries",
)


def out_hashes(lock_file: Path) -> dict[str, str]:
    """md5 of each output of every stage recorded in a dvc.lock."""
    stages = yaml.safe_load(lock_file.read_text())["stages"].values()
    return {out["path"]: out["md5"] for stage in stages for out in stage.get("outs", [])}


def test_exp_run_at_ci_scale_then_status_is_clean_and_snakemake_agrees(repo_copy: Path):
    run(["dvc", "exp", "run", "-S", "scale=ci"], repo_copy)
    status = run(["dvc", "status"], repo_copy)
    assert "up to date" in status.stdout, status.stdout
    assert "Nothing to be done" in run(["snakemake", "-n", "all"], repo_copy).stdout

    # The seam: dvc checkout restores outputs with new file times; Snakemake must not rebuild.
    run(["rm", "-rf", "results", "data/ndfa"], repo_copy)
    run(["dvc", "checkout"], repo_copy)
    assert "Nothing to be done" in run(["snakemake", "-n", "all"], repo_copy).stdout
    assert "up to date" in run(["dvc", "status"], repo_copy).stdout


def test_smoke_repro_reproduces_the_committed_lock(repo_copy: Path):
    committed = out_hashes(repo_copy / "dvc.lock")
    run(["dvc", "repro"], repo_copy, timeout=2700)
    fresh = out_hashes(repo_copy / "dvc.lock")
    for path in DETERMINISTIC:
        assert fresh[path] == committed[path], f"{path}: hash differs from the committed dvc.lock"
    assert "up to date" in run(["dvc", "status"], repo_copy).stdout
