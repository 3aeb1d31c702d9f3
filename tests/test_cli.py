from pathlib import Path

import yaml

from reprolab.cli import main
from tests.conftest import ROOT


def test_params_check_accepts_the_committed_file(monkeypatch, capsys):
    monkeypatch.chdir(ROOT)
    assert main(["params-check"]) == 0
    assert "valid" in capsys.readouterr().out


def test_params_check_names_a_bad_key(monkeypatch, capsys, tmp_path: Path):
    monkeypatch.chdir(ROOT)
    config = yaml.safe_load((ROOT / "params.yaml").read_text())
    config["ndfa"]["train"]["lr"] = -0.1
    bad = tmp_path / "params.yaml"
    bad.write_text(yaml.safe_dump(config))
    assert main(["params-check", "--params", str(bad)]) == 2
    assert "ndfa.train.lr" in capsys.readouterr().err


def test_dvc_export_check(monkeypatch, tmp_path: Path):
    monkeypatch.chdir(ROOT)
    assert main(["dvc-export", "--check"]) == 0
    stale = tmp_path / "dvc.yaml"
    stale.write_text("stages: {}\n")
    assert main(["dvc-export", "--check", "--output", str(stale)]) == 1
