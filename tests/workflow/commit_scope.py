"""What the last commit touched, in terms of dvc.yaml's stages: the workflow tests that cannot
afford every study on every commit (CI's 30 minutes) repeat the ones a commit could have changed."""

from __future__ import annotations

import subprocess
from pathlib import Path

import yaml

from reprolab.dvc_lock import declared_outputs


def stage_specs(dvc_yaml: Path) -> dict[str, dict]:
    """Each stage of dvc.yaml with its outs and metrics flattened to plain paths."""
    spec = yaml.safe_load(dvc_yaml.read_text())["stages"]
    for stage in spec.values():
        stage["paths"] = declared_outputs(stage)
    return spec


def with_upstream(spec: dict[str, dict], stages: list[str]) -> set[str]:
    """`stages` and every stage whose outputs they depend on, directly or not."""
    producer = {path: name for name, stage in spec.items() for path in stage["paths"]}
    found, todo = set(), list(stages)
    while todo:
        stage = todo.pop()
        if stage not in found:
            found.add(stage)
            todo.extend(producer[dep] for dep in spec[stage]["deps"] if dep in producer)
    return found


def touched_stages(spec: dict[str, dict], changed: list[str]) -> list[str]:
    """Stages one of whose code or data deps is (or contains) a changed file."""
    return [
        name
        for name, stage in spec.items()
        if any(
            path == dep or path.startswith(dep.rstrip("/") + "/")
            for dep in stage["deps"]
            for path in changed
        )
    ]


def last_commit_changes(root: Path) -> list[str]:
    """Files the last commit changed (everything when there is no parent commit)."""
    result = subprocess.run(
        ["git", "diff", "--name-only", "HEAD~1", "HEAD"], cwd=root, capture_output=True, text=True
    )
    return result.stdout.split() if result.returncode == 0 else ["."]


def head_commit(root: Path) -> str:
    """The hex id of the checked-out commit (forty zeros outside a git repository)."""
    result = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True)
    return result.stdout.strip() if result.returncode == 0 else "0" * 40
