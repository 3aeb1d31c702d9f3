"""The rules' conda envs: pinned like the lock, holding what their rules import, the project
installed by a post-deploy script. conda is not run here; what it would read is checked."""

import os
from pathlib import Path

import pytest

from reprolab import envs
from reprolab.imports import imported_modules, third_party_imports
from reprolab.lockfile import read_pins
from tests.conftest import ROOT

ENV_FILES = sorted((ROOT / envs.ENVS).glob("*.yaml"))
RULES = envs.workflow_rules(ROOT)
PINS = read_pins(ROOT / "requirements.lock")[0]


def test_the_committed_envs_are_what_the_rules_and_the_lock_call_for():
    assert envs.env_problems(ROOT) == []


@pytest.mark.parametrize("env", ENV_FILES, ids=lambda path: path.stem)
def test_every_pin_is_the_locks(env: Path):
    installs = envs.parse_env(env)
    assert installs.pop("python") == envs.lock_python(ROOT / "requirements.lock")
    assert installs, f"{env.name} installs nothing"
    pins = envs.env_pins([rule for rule in RULES if rule.env == env.relative_to(ROOT)], PINS)
    wrong = {name: v for name, v in installs.items() if v is None or pins.get(name) != v}
    assert wrong == {}, f"{env.name}: not pinned at requirements.lock's version"


@pytest.mark.parametrize("env", ENV_FILES, ids=lambda path: path.stem)
def test_every_env_holds_what_its_rules_import_and_no_editable_install(env: Path):
    users = [rule for rule in RULES if rule.env == env.relative_to(ROOT)]
    assert users, f"no rule names {env.name}"
    modules = set().union(*(envs.rule_imports(rule, ROOT) for rule in users))
    needed, problems = envs.import_distributions(modules)
    assert problems == []
    missing = needed - set(envs.parse_env(env))
    assert missing == set(), f"{env.name} lacks what {[r.name for r in users]} import"
    assert not [line for line in envs.pip_options(env) if line.startswith(("-e", "--editable"))]


def test_every_env_is_the_closure_of_its_rules_needs_and_nothing_more():
    """conda runs the pip: section with dependency resolution: a requirement left out would
    come in unpinned, a package no rule needs is everything-in-every-env again."""
    for env, users in envs.env_rules(RULES).items():
        needed, problems = envs.needed_distributions(users, ROOT)
        assert problems == []
        installed = set(envs.parse_env(ROOT / env)) - {"python"}
        assert installed == needed, env


def test_every_rule_with_a_script_names_an_existing_env():
    with_scripts = [rule for rule in RULES if rule.entries]
    assert len(with_scripts) > 20
    for rule in with_scripts:
        assert rule.env is not None, f"{rule.rule_file}: rule {rule.name} has no conda:"
        assert (ROOT / rule.env).is_file(), f"{rule.name}: {rule.env} does not exist"


@pytest.mark.parametrize("env", ENV_FILES, ids=lambda path: path.stem)
def test_each_env_has_an_executable_post_deploy_script_without_deps(env: Path):
    script = env.with_suffix(envs.POST_DEPLOY)
    assert script.is_file() and os.access(script, os.X_OK), script
    text = script.read_text()
    assert "--no-deps" in text and "-e " in text and "../" not in text


def test_rules_are_read_with_their_env_script_and_notebooks():
    by_name = {rule.name: rule for rule in RULES}
    train = by_name["ndfa_train"]
    assert train.env == Path("envs/torch.yaml")
    assert train.entries == (Path("workflow/scripts/ndfa_train.py"),)
    report = by_name["{_study}_report"]
    assert report.env == Path("envs/report.yaml")
    assert Path("workflow/notebooks/ndfa.ipynb") in report.entries
    assert by_name["{_study}"].entries == ()


def test_imports_follow_the_project_lazily_and_through_import_module(tmp_path: Path):
    src = tmp_path / "src"
    (src / "reprolab/studies/demo").mkdir(parents=True)
    for package in ("reprolab", "reprolab/studies", "reprolab/studies/demo"):
        (src / package / "__init__.py").write_text("")
    (src / "reprolab/loader.py").write_text(
        "import importlib\n\ndef load(study):\n"
        '    return importlib.import_module(f"reprolab.studies.{study}.results")\n'
    )
    (src / "reprolab/studies/demo/results.py").write_text(
        "import json\n\ndef table():\n    import cv2\n"
    )
    script = tmp_path / "run.py"
    script.write_text("import yaml\nfrom reprolab.loader import load\n")
    files = imported_modules(script, src)
    assert src / "reprolab/studies/demo/results.py" in files
    assert third_party_imports([script, *files]) == {"yaml", "cv2"}
    assert envs.import_distributions({"yaml", "cv2"})[0] == {"pyyaml", "opencv-python-headless"}


def test_an_env_file_is_read_into_pins(tmp_path: Path):
    env = tmp_path / "x.yaml"
    env.write_text(
        "channels: [conda-forge]\ndependencies:\n  - python=3.11\n  - pip\n  - libopenslide\n"
        "  - pip:\n      - --extra-index-url https://example.org/whl\n      - pip==26.3\n"
        "      - numpy>=2.0\n      - Torch==2.13.0+cpu\n      - -e ../\n"
    )
    assert envs.parse_env(env) == {
        "python": "3.11",
        "pip": "26.3",
        "libopenslide": None,
        "numpy": None,
        "torch": "2.13.0+cpu",
    }
    assert envs.pip_options(env) == ["--extra-index-url https://example.org/whl", "-e ../"]


def test_a_stale_env_is_reported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    files, _ = envs.expected_files(ROOT)
    stale = files[Path("envs/video.yaml")].replace("numpy==", "numpy>=")
    monkeypatch.setattr(envs, "expected_files", lambda root: ({Path("envs/video.yaml"): stale}, []))
    assert "envs/video.yaml: stale or missing" in envs.env_problems(ROOT)


def test_an_env_serving_gpu_rules_takes_the_cuda_build_of_torch():
    gpu_envs = {rule.env for rule in RULES if rule.gpu}
    assert gpu_envs == {Path("envs/torch.yaml"), Path("envs/wsi.yaml")}
    for env in gpu_envs:
        assert envs.parse_env(ROOT / env)["torch"] == PINS["torch"].split("+")[0] != PINS["torch"]
        assert not any("whl/cpu" in line for line in envs.pip_options(ROOT / env))
    assert envs.parse_env(ROOT / "envs/report.yaml")["torch"] == PINS["torch"]
