"""`reprolab new-study`: the skeleton runs through the workflow and meets the contract."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from reprolab.core.io import read_json
from reprolab.core.layout import CONTRACT_FILES
from reprolab.core.schemas import validate_claims
from reprolab.scaffold import new_study, skeleton_files
from tests.conftest import run

pytestmark = pytest.mark.integration


def test_new_study_runs_through_the_workflow(repo_copy: Path):
    env = {"PYTHONPATH": str(repo_copy / "src")}  # the copy's packages, the new one included
    run(["reprolab", "new-study", "demo_study"], repo_copy, extra_env=env)
    params = repo_copy / "params.yaml"
    text = params.read_text()
    params.write_text(
        re.sub(r"^studies: \[(.*)\]$", r"studies: [\1, demo_study]", text, count=1, flags=re.M)
    )
    run(
        ["snakemake", "--cores", "2", "--config", "scale=ci", "--", "demo_study"],
        repo_copy,
        extra_env=env,
    )
    for name in CONTRACT_FILES:
        assert (repo_copy / "results/demo_study" / name).is_file(), name
    claims = read_json(repo_copy / "results/demo_study/claims.json")
    validate_claims(claims, "demo_study claims.json")
    assert claims["claims"][0]["kind"] == "paired"
    run(
        [
            "python",
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "tests/studies/demo_study",
            "tests/workflow/test_contract.py",
            "-k",
            "demo_study or torch",
        ],
        repo_copy,
        extra_env=env,
    )


def test_a_taken_or_bad_id_is_refused(tmp_path: Path):
    (tmp_path / "params.yaml").write_text("studies: [pem]\n\npem:\n  methods: [pem]\n")
    with pytest.raises(ValueError, match="is taken"):
        new_study("pem", tmp_path)
    with pytest.raises(ValueError, match="lower case"):
        new_study("Bad-Id", tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["params.yaml"]


def test_the_skeleton_is_small():
    """The point of the contract: a new study is a few short files."""
    files = skeleton_files("demo_study")
    assert len(files) <= 11
    assert sum(text.count("\n") for text in files.values()) < 450
