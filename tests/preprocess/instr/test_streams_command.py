"""`reprolab streams build|check` as a user types them."""

from __future__ import annotations

import yaml

from reprolab.cli import main
from reprolab.preprocess.instr.synthcit import SynthCITSpec, build_synthcit
from reprolab.preprocess.instr.visarith import VisArithSpec, build_visarith
from tests.preprocess.instr.conftest import SMALL_SPEC, record, write_lines
from tests.preprocess.instr.test_check import broken_file


def test_build_writes_what_the_library_writes(tmp_path, capsys):
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(SMALL_SPEC))
    assert (
        main(["streams", "build", "--spec", str(spec), "--out", str(tmp_path / "cli"), "--quiet"])
        == 0
    )
    assert "6 tasks, 400 records" in capsys.readouterr().out
    build_synthcit(SynthCITSpec.from_params(SMALL_SPEC), tmp_path / "lib")
    for name in ("stream.yaml", "synthcit.h5", "align.jsonl", "mixed/test.jsonl"):
        assert (tmp_path / "cli" / name).read_bytes() == (tmp_path / "lib" / name).read_bytes()


def test_build_writes_a_visarith_stream_when_the_spec_names_it(tmp_path, capsys):
    values = {
        "seed": 0,
        "noise": 10.0,
        "stroke_gain": [0.7, 1.0],
        "tasks": [{"name": "sft", "train": 4, "test": 2}, {"name": "rl", "train": 3, "test": 2}],
    }
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({"generator": "visarith", **values}))
    assert main(["streams", "build", "--spec", str(spec), "--out", str(tmp_path / "cli")]) == 0
    assert "2 tasks, 11 records" in capsys.readouterr().out
    build_visarith(VisArithSpec.from_params(values), tmp_path / "lib")
    for name in ("stream.yaml", "visarith.h5", "sft/train.jsonl", "rl/test.jsonl"):
        assert (tmp_path / "cli" / name).read_bytes() == (tmp_path / "lib" / name).read_bytes()
    spec.write_text(yaml.safe_dump({"generator": "mnist", **values}))
    assert main(["streams", "build", "--spec", str(spec), "--out", str(tmp_path / "o")]) == 2
    assert "key 'generator'" in capsys.readouterr().err


def test_build_rejects_a_bad_spec(tmp_path, capsys):
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump(SMALL_SPEC | {"noise": -1}))
    assert main(["streams", "build", "--spec", str(spec), "--out", str(tmp_path / "o")]) == 2
    assert "key 'noise'" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_check_prints_every_defect_and_fails(tmp_path, capsys):
    path, expected = broken_file(tmp_path)
    assert main(["streams", "check", str(path)]) == 1
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == len(expected) + 1
    for printed, (line, record_id, message) in zip(lines[:-1], expected, strict=True):
        id_part = f"(id {record_id}) " if record_id else ""
        assert printed.startswith(f"{path}:{line}: {id_part}{message}"), printed
    assert lines[-1] == "8 defect(s) in 8 bad record(s); 1 record(s) ok"


def test_check_passes_good_files_and_streams(tmp_path, synthcit, capsys):
    path = write_lines(tmp_path / "r.jsonl", [record("a", "q ?", "x"), record("b", "q ?", "y")])
    assert main(["streams", "check", str(path)]) == 0
    assert capsys.readouterr().out == "2 records ok\n"
    assert main(["streams", "check", str(synthcit)]) == 0
    assert capsys.readouterr().out == "400 records ok\n"


def test_check_of_a_stream_names_its_bad_files(tmp_path, capsys):
    bad, _ = broken_file(tmp_path)
    good = write_lines(tmp_path / "good.jsonl", [record("a", "q ?", "x")])
    manifest = {"name": "s", "tasks": [{"name": "t", "train": good.name, "test": bad.name,
                                        "metric": "m"}, {"name": "u", "train": "none.jsonl",
                                        "test": good.name, "metric": "m"}]}  # fmt: skip
    (tmp_path / "stream.yaml").write_text(yaml.safe_dump(manifest))
    assert main(["streams", "check", str(tmp_path / "stream.yaml")]) == 1
    out = capsys.readouterr().out
    assert f"{bad}:3: (id r3) missing key 'conversations'" in out
    assert f"{tmp_path}/none.jsonl: record file named by" in out
    assert out.splitlines()[-1] == "8 defect(s) in 9 bad record(s); 3 record(s) ok"
    (tmp_path / "stream.yaml").write_text("name: s\n")
    assert main(["streams", "check", str(tmp_path / "stream.yaml")]) == 1
    assert "key 'tasks': missing" in capsys.readouterr().out


def test_check_of_a_missing_file_or_a_folder_exits_2_with_one_line(tmp_path, capsys):
    assert main(["streams", "check", str(tmp_path / "none.jsonl")]) == 2
    assert capsys.readouterr().err == f"error: FILE {tmp_path}/none.jsonl: no such file\n"
    (tmp_path / "dir.jsonl").mkdir()
    assert main(["streams", "check", str(tmp_path / "dir.jsonl")]) == 2
    expected = f"error: FILE {tmp_path}/dir.jsonl: is a folder, expected a file\n"
    assert capsys.readouterr().err == expected


def test_check_reports_deep_nesting_as_a_defect(tmp_path, capsys):
    """100,000 nested lists made Python's JSON reader raise RecursionError out of the command."""
    deep = "[" * 100_000 + "]" * 100_000
    (tmp_path / "deep.jsonl").write_text('{"id": "a", "x": ' + deep + "}\n")
    (tmp_path / "deep.json").write_text("[" + deep + "]\n")
    for name in ("deep.jsonl", "deep.json"):
        assert main(["streams", "check", str(tmp_path / name)]) == 1
        assert "nested deeper than the JSON reader allows" in capsys.readouterr().out


def test_build_names_a_bad_spec_file(tmp_path, capsys):
    assert main(["streams", "build", "--spec", str(tmp_path), "--out", str(tmp_path / "o")]) == 2
    assert capsys.readouterr().err == f"error: --spec {tmp_path}: is a folder, expected a file\n"
    assert not (tmp_path / "o").exists()


def test_check_confines_a_stream_to_its_folder_unless_allowed(tmp_path, capsys):
    """A manifest naming `../secret.jsonl` is refused without reading it (its content is never
    printed); --allow-outside-paths reads it."""
    stream = tmp_path / "stream"
    stream.mkdir()
    secret = tmp_path / "secret.jsonl"
    secret.write_text("SECRET-CONTENT\n")
    manifest = stream / "stream.yaml"
    task = "{name: t, train: ../secret.jsonl, test: ../secret.jsonl, metric: exact_match}"
    manifest.write_text(f"name: s\ntasks:\n  - {task}\n")
    assert main(["streams", "check", str(manifest)]) == 1
    out = capsys.readouterr().out
    assert "key 'tasks[0].train': '../secret.jsonl' lies outside the stream's folder" in out
    assert "SECRET" not in out and "'S'" not in out
    assert main(["streams", "check", str(manifest), "--allow-outside-paths"]) == 1
    out = capsys.readouterr().out
    assert "is neither JSONL nor a JSON array" in out and "SECRET" not in out and "'S'" not in out
