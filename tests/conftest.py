"""Shared fixtures: the repository root and a throw-away copy of it for workflow runs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def clone_files(root: Path = ROOT) -> list[str]:
    """What a clone of the working tree holds: tracked files and untracked ones git does not
    ignore (so produced data, DVC's cache and the virtual environment stay behind, while the
    committed results files come along)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        capture_output=True,
        check=True,
    ).stdout.decode()
    return sorted(name for name in listed.split("\0") if name and (root / name).is_file())


def copy_repository(dest: Path) -> Path:
    """Copy the working tree as a clone would have it to `dest` and make it a git repository."""
    for name in clone_files():
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / name, target)
    git = ["git", "-c", "user.name=test", "-c", "user.email=test@example.org"]
    subprocess.run([*git, "init", "-q"], cwd=dest, check=True)
    subprocess.run([*git, "add", "-A"], cwd=dest, check=True)
    subprocess.run([*git, "commit", "-qm", "copy"], cwd=dest, check=True)
    return dest


def copy_run(repo: Path, dest: Path) -> Path:
    """A copy of a workflow run's repository, file times and Snakemake's records included, so
    Snakemake sees the same state there (nothing to do until an output is removed)."""
    shutil.copytree(repo, dest, symlinks=True)
    return dest


def run(
    cmd: list[str],
    cwd: Path,
    check: bool = True,
    timeout: int = 900,
    extra_env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess:
    """Run a command of the project's virtual environment in `cwd`, capturing its output."""
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
        "HF_HUB_OFFLINE": "1",
        **(extra_env or {}),
    }
    result = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if check and result.returncode != 0:
        raise AssertionError(
            f"{' '.join(cmd)} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
        )
    return result


@pytest.fixture
def repo_copy(tmp_path: Path) -> Path:
    """A fresh copy of the repository, as a clone would be."""
    return copy_repository(tmp_path / "repo")


@pytest.fixture(scope="module")
def torch_one_thread():
    """Run a module's torch models on one thread, then restore the caller's setting."""
    import torch

    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


@pytest.fixture
def no_network(monkeypatch):
    """Any attempt to open a network connection fails the test."""
    import socket

    def refuse(*args, **kwargs):
        raise AssertionError(f"network access attempted: {args}")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


def study_section(study: str, scale: str) -> dict:
    """A study's params.yaml section at `scale`, merged as the workflow merges it."""
    from reprolab.core.params import load_yaml, study_params

    return study_params({**load_yaml(ROOT / "params.yaml"), "scale": scale}, study)


def touch_paper_inputs(root: Path) -> list[Path]:
    """Create, empty, every file the workflow declares as paper-scale data
    (reprolab.core.paper_data) where `root`'s params.yaml puts it: enough for a paper-scale dry
    run, which checks only that the files exist. Returns the files."""
    from reprolab.core.paper_data import declared_inputs
    from reprolab.core.params import load_yaml

    config = {**load_yaml(root / "params.yaml"), "scale": "paper"}
    paths = sorted({root / item.path for item in declared_inputs(config)})
    for path in paths:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()
    return paths
