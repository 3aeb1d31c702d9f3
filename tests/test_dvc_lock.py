"""dvc.lock against the working tree: stale sources found, recorded, and none in the commit."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import yaml

from reprolab.dvc_lock import dvc_status, produced_paths, record_sources, stale_sources
from tests.conftest import ROOT

PIPELINE = {
    "stages": {
        "make": {
            "cmd": "cp source.txt made.txt",
            "deps": ["source.txt"],
            "params": ["rate"],
            "outs": ["made.txt"],
        },
        "use": {
            "cmd": "cp made.txt used.txt",
            "deps": ["made.txt", "notes.txt"],
            "outs": ["used.txt"],
        },
    }
}


def dvc(root: Path, *args: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "dvc", *args], cwd=root, capture_output=True, text=True, check=True
    )
    return result.stdout


def pipeline(tmp_path: Path) -> Path:
    """A two-stage DVC pipeline in a fresh git repository, reproduced once."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    dvc(tmp_path, "init", "-q")
    (tmp_path / "source.txt").write_text("a\n")
    (tmp_path / "notes.txt").write_text("first notes\n")
    (tmp_path / "params.yaml").write_text("rate: 1\n")
    (tmp_path / "dvc.yaml").write_text(yaml.safe_dump(PIPELINE))
    dvc(tmp_path, "repro", "-q")
    return tmp_path


def lock_entry(root: Path, stage: str) -> dict:
    return yaml.safe_load((root / "dvc.lock").read_text())["stages"][stage]


def test_the_committed_lock_records_the_sources_of_every_stage():
    stale = stale_sources(dvc_status(ROOT), produced_paths(ROOT))
    assert stale == {}, f"run `reprolab dvc-lock` for what to do: {stale}"


def test_changed_sources_are_found_and_recorded_without_touching_outputs(tmp_path: Path):
    root = pipeline(tmp_path)
    assert stale_sources(dvc_status(root), produced_paths(root)) == {}
    outs_before = lock_entry(root, "use")["outs"]
    (root / "notes.txt").write_text("better notes\n")
    (root / "params.yaml").write_text("rate: 2\n")
    assert stale_sources(dvc_status(root), produced_paths(root)) == {
        "make": ["params.yaml"],
        "use": ["notes.txt"],
    }
    assert sorted(record_sources(root, ["make", "use"])) == [
        "make: params.yaml:rate",
        "use: notes.txt",
    ]
    assert stale_sources(dvc_status(root), produced_paths(root)) == {}
    assert lock_entry(root, "use")["outs"] == outs_before
    assert lock_entry(root, "make")["params"] == {"params.yaml": {"rate": 2}}


def test_a_stage_whose_produced_input_changed_waits_for_its_rerun(tmp_path: Path):
    """`use` reads made.txt: once that changes, `use` must rerun, so its sources are not listed
    (recording them would hide that its outputs are stale)."""
    root = pipeline(tmp_path)
    (root / "made.txt").write_text("edited by hand\n")
    (root / "notes.txt").write_text("better notes\n")
    assert stale_sources(dvc_status(root), produced_paths(root)) == {}
    (root / "made.txt").unlink()
    assert stale_sources(dvc_status(root), produced_paths(root)) == {"use": ["notes.txt"]}
