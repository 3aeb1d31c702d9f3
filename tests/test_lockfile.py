from pathlib import Path

from reprolab.lockfile import lock_problems, read_pins
from tests.conftest import ROOT

PYPROJECT = """[project]
name = "x"
dependencies = ["numpy>=2.0"]
[project.optional-dependencies]
dev = []
"""


def test_the_committed_lock_is_current():
    assert lock_problems(ROOT / "requirements.lock", ROOT / "pyproject.toml") == []


def test_a_dependency_added_to_pyproject_makes_the_lock_stale(tmp_path: Path):
    pyproject = tmp_path / "pyproject.toml"
    text = (ROOT / "pyproject.toml").read_text()
    pyproject.write_text(text.replace('"tqdm>=4.66",', '"tqdm>=4.66",\n    "left-pad-x>=1",'))
    problems = lock_problems(ROOT / "requirements.lock", pyproject)
    assert any("left-pad-x: in" in p and "not pinned" in p for p in problems), problems


def test_a_tightened_specifier_and_a_dropped_dependency_are_both_stale(tmp_path: Path):
    pyproject = tmp_path / "pyproject.toml"
    lock = tmp_path / "requirements.lock"
    pyproject.write_text(PYPROJECT.replace("numpy>=2.0", "numpy>=99"))
    numpy = read_pins(ROOT / "requirements.lock")[0]["numpy"]
    lock.write_text(f"numpy=={numpy}\ntqdm==4.67.1\n")
    problems = lock_problems(lock, pyproject)
    assert any("asks >=99" in p for p in problems), problems
    assert any(p.startswith("tqdm: pinned") and "nothing" in p for p in problems), problems


def test_paths_and_index_urls_are_refused(tmp_path: Path):
    lock = tmp_path / "requirements.lock"
    lock.write_text("--find-links /opt/wheels\nnumpy==2.0.0\n./wheels/torch.whl\n")
    pins, problems = read_pins(lock)
    assert pins == {"numpy": "2.0.0"}
    assert len(problems) == 2 and "requirements.lock:1" in problems[0]
