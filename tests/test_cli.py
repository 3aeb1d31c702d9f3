import json
import os
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import pytest
import yaml

import reprolab
from reprolab.cli import describe_error, main
from tests.conftest import ROOT

SRC = Path(reprolab.__file__).resolve().parents[1]
"""The folder this checkout's package is imported from, for commands run in a subprocess."""
HEAVY = ("torch", "transformers", "pandas")

LOADED = """
import json, sys
from reprolab.cli import describe_error, main
try:
    main(sys.argv[1:])
except SystemExit:
    pass
print(json.dumps(sorted(m for m in {heavy!r} if m in sys.modules)), file=sys.stderr)
"""


def reprolab_command(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """`reprolab ARGS` in a fresh interpreter, run in `cwd`, importing this checkout."""
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    return subprocess.run(
        [sys.executable, "-m", "reprolab.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )


def loaded_modules(*args: str, cwd: Path) -> list[str]:
    """Which of HEAVY a fresh interpreter has imported after `reprolab ARGS`."""
    result = subprocess.run(
        [sys.executable, "-c", LOADED.format(heavy=HEAVY), *args],
        cwd=cwd,
        env={**os.environ, "PYTHONPATH": str(SRC)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    return json.loads(result.stderr.strip().splitlines()[-1])


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
    err = capsys.readouterr().err
    assert f"{bad}: invalid parameters" in err and "ndfa.train.lr" in err
    assert main(["params-check", str(bad)]) == 2
    assert "ndfa.train.lr" in capsys.readouterr().err


def test_params_check_names_a_missing_file(capsys, tmp_path: Path):
    assert main(["params-check", str(tmp_path / "none.yaml")]) == 2
    assert capsys.readouterr().err == f"error: params file {tmp_path / 'none.yaml'}: no such file\n"


def test_every_command_reports_bad_input_in_one_line_with_status_2(tmp_path: Path):
    """The CLI catches bad input at one place: a folder given as a params file, a file given as
    an output folder, a missing input; each exits 2 with one `error:` line and no traceback."""
    afile = tmp_path / "afile"
    afile.write_text("keep")
    (tmp_path / "in").mkdir()
    commands = {
        ("params-check", str(tmp_path)): f"params file {tmp_path}: is a folder, expected a file",
        ("wsi", "tile", "--slides", str(tmp_path / "in"), "--out", str(afile)): f"--out {afile}",
        ("video", "frames", "--videos", str(tmp_path / "in"), "--out", str(afile)): "--out",
        ("wsi", "features", "--slides", "none", "--patches", "x", "--out", "o"): "--slides none",
        ("streams", "check", str(tmp_path / "in")): "is a folder, expected a file",
        ("compare", str(tmp_path / "none"), str(tmp_path)): "none",
    }
    for argv, message in commands.items():
        result = reprolab_command(*argv, cwd=tmp_path)
        assert result.returncode == 2, (argv, result.stderr)
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0], argv
    assert afile.read_text() == "keep"


def test_describe_error_names_the_file_of_an_os_error():
    error = PermissionError(13, "Permission denied", "/x/y")
    assert describe_error(error) == "/x/y: Permission denied"
    assert describe_error(ValueError("--x must be positive")) == "--x must be positive"


def test_params_check_runs_outside_the_repository(tmp_path: Path):
    good = reprolab_command("params-check", str(ROOT / "params.yaml"), cwd=tmp_path)
    assert good.returncode == 0, good.stderr
    assert good.stdout == f"{ROOT / 'params.yaml'}: valid\n"
    config = yaml.safe_load((ROOT / "params.yaml").read_text())
    config["pem"]["claims"]["alpha"] = 2
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(config))
    bad = reprolab_command("params-check", cwd=tmp_path)
    assert bad.returncode == 2
    assert "params.yaml: invalid parameters" in bad.stderr
    assert "key 'pem.claims.alpha': 2 is greater than or equal to the maximum of 1" in bad.stderr


def test_version_is_the_installed_distributions(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["--version"])
    assert exited.value.code == 0
    assert capsys.readouterr().out == f"reprolab {metadata.version('reprolab')}\n"


def test_help_shows_the_defaults(capsys):
    with pytest.raises(SystemExit):
        main(["dvc-export", "--help"])
    out = capsys.readouterr().out
    assert "(default: params.yaml)" in out and "(default: dvc.yaml)" in out


def test_help_and_params_check_import_no_torch_transformers_or_pandas(tmp_path: Path):
    assert loaded_modules("--help", cwd=tmp_path) == []
    assert loaded_modules("params-check", str(ROOT / "params.yaml"), cwd=tmp_path) == []
    # The check sees an import when a subcommand does make one: compare reads tables with pandas.
    assert "pandas" in loaded_modules("compare", "--help", cwd=tmp_path)


def test_dvc_export_check(monkeypatch, tmp_path: Path):
    monkeypatch.chdir(ROOT)
    assert main(["dvc-export", "--check"]) == 0
    stale = tmp_path / "dvc.yaml"
    stale.write_text("stages: {}\n")
    assert main(["dvc-export", "--check", "--output", str(stale)]) == 1


def test_fragility_records_each_study_and_names_a_bad_one(monkeypatch, capsys, tmp_path: Path):
    from tests.core.test_fragility import AMD, PARAMS, PINNED, SECOND, provenance, second_run

    params = {"scale": "smoke", "cpu_kernels": {"torch": "avx2", "mkl": "AVX2", "onednn": "AVX2"}}
    (tmp_path / "params.yaml").write_text(yaml.safe_dump({**params, "toy": PARAMS, "other": {}}))
    second_run(tmp_path / "second" / "toy", SECOND)
    second_run(tmp_path / "second" / "other", SECOND)
    provenance(tmp_path / "results" / "toy", PINNED, AMD)
    monkeypatch.chdir(tmp_path)
    assert main(["fragility", "second"]) == 2
    out, err = capsys.readouterr()
    assert "toy: 1 run(s) recorded, the last ATEN_CPU_CAPABILITY=default on AMD EPYC" in out
    assert "error: other:" in err and "other `other` params" in err
    assert json.loads((tmp_path / "results/toy/fragility.json").read_text())["study"] == "toy"
    assert not (tmp_path / "results/other/fragility.json").exists()


def test_data_check_lists_every_missing_input_then_passes(monkeypatch, capsys, tmp_path: Path):
    from reprolab.core.paper_data import declared_inputs
    from tests.conftest import touch_paper_inputs

    (tmp_path / "params.yaml").write_text((ROOT / "params.yaml").read_text())
    monkeypatch.chdir(tmp_path)
    config = {**yaml.safe_load((ROOT / "params.yaml").read_text()), "scale": "paper"}
    paths = {item.path for item in declared_inputs(config)}
    assert main(["data-check", "--scale", "paper"]) == 1
    out = capsys.readouterr().out
    assert all(f"MISSING  {path}\n" in out for path in paths)
    assert out.count("MISSING") == len(paths)
    assert "https://www.cs.toronto.edu/~kriz/cifar-10-python.tar.gz" in out
    assert f"0 of {len(paths)} inputs present at scale paper" in out
    touch_paper_inputs(tmp_path)
    assert main(["data-check"]) == 0
    out = capsys.readouterr().out
    assert "MISSING" not in out and out.count("present") == len(paths) + 1
    assert f"{len(paths)} of {len(paths)} inputs present at scale paper" in out


@pytest.mark.parametrize("scale", ["smoke", "ci"])
def test_data_check_needs_nothing_at_smoke_and_ci(capsys, tmp_path: Path, scale: str):
    assert main(["data-check", "--scale", scale, "--params", str(ROOT / "params.yaml")]) == 0
    assert capsys.readouterr().out == (
        f"scale {scale}: no external data needed (the workflow generates its data)\n"
    )
    params = str(ROOT / "params.yaml")
    assert loaded_modules("data-check", "--params", params, cwd=tmp_path) == []
