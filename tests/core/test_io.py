import json
import os
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

from reprolab.core.io import (
    atomic_dir,
    atomic_path,
    dumps_json,
    read_h5,
    read_json,
    recover_dir,
    write_h5,
    write_json,
    write_jsonl,
)


def test_json_is_canonical():
    text = dumps_json({"b": np.float32(0.1), "a": [1.0 / 3.0, float("nan")], "c": np.arange(2)})
    assert text == dumps_json({"c": [0, 1], "a": [1.0 / 3.0, None], "b": np.float32(0.1)})
    data = json.loads(text)
    assert list(data) == ["a", "b", "c"]
    assert data["a"] == [0.3333333333, None]


def test_jsonl_has_one_sorted_object_per_line(tmp_path: Path):
    path = tmp_path / "records.jsonl"
    write_jsonl(path, [{"b": 1, "a": [2]}, {"c": None}])
    assert path.read_text() == '{"a": [2], "b": 1}\n{"c": null}\n'
    assert [json.loads(line) for line in path.read_text().splitlines()] == [
        {"a": [2], "b": 1},
        {"c": None},
    ]


def test_failed_write_leaves_nothing(tmp_path: Path):
    target = tmp_path / "out.json"
    with pytest.raises(RuntimeError):
        with atomic_path(target) as tmp:
            tmp.write_text("half")
            raise RuntimeError("killed")
    assert list(tmp_path.iterdir()) == []


def test_failed_write_keeps_previous_version(tmp_path: Path):
    target = tmp_path / "out.json"
    write_json(target, {"v": 1})
    with pytest.raises(TypeError):
        write_json(target, {"v": object()})
    assert read_json(target) == {"v": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_h5_is_byte_identical_across_writes(tmp_path: Path):
    arrays = {
        "x": np.arange(12, dtype=np.float32).reshape(3, 4),
        "y": np.array([1, 2], dtype=np.int64),
    }
    write_h5(tmp_path / "a.h5", arrays, attrs={"n": 3})
    time.sleep(1.1)
    write_h5(tmp_path / "b.h5", arrays, attrs={"n": 3})
    assert (tmp_path / "a.h5").read_bytes() == (tmp_path / "b.h5").read_bytes()
    back = read_h5(tmp_path / "a.h5")
    np.testing.assert_array_equal(back["x"], arrays["x"])


def test_read_json_names_the_file(tmp_path: Path):
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(ValueError, match="bad.json"):
        read_json(bad)


def write_folder(path: Path, files: dict[str, str]) -> None:
    """Replace folder `path` with one holding `files` (name -> text), through `atomic_dir`."""
    with atomic_dir(path) as tmp:
        for name, text in files.items():
            (tmp / name).write_text(text)


def folder_text(path: Path) -> dict[str, str]:
    return {p.name: p.read_text() for p in sorted(path.iterdir())}


def fail_renames(monkeypatch: pytest.MonkeyPatch, target: Path, back_too: bool) -> None:
    """Make `os.rename` fail when it moves the new (temporary) folder to `target` and, with
    `back_too`, when it moves anything there (putting the old folder back), as a crash would."""
    real = os.rename

    def rename(src, dst):
        moving_new = Path(src).name.endswith(".tmp")
        if Path(dst) == target and (moving_new or back_too):
            raise OSError(f"simulated failure renaming {src} -> {dst}")
        real(src, dst)

    monkeypatch.setattr(os, "rename", rename)


def test_atomic_dir_replaces_a_folder_whole(tmp_path: Path):
    target = tmp_path / "model"
    write_folder(target, {"a.txt": "old", "only_old.txt": "x"})
    write_folder(target, {"a.txt": "new"})
    assert folder_text(target) == {"a.txt": "new"}
    assert [p.name for p in tmp_path.iterdir()] == ["model"]
    assert target.stat().st_mode & 0o777 == 0o755


def test_failed_atomic_dir_keeps_the_old_folder(tmp_path: Path):
    target = tmp_path / "model"
    write_folder(target, {"a.txt": "old"})
    with pytest.raises(RuntimeError):
        with atomic_dir(target) as tmp:
            (tmp / "a.txt").write_text("half")
            raise RuntimeError("killed")
    assert folder_text(target) == {"a.txt": "old"}
    assert [p.name for p in tmp_path.iterdir()] == ["model"]


def test_an_error_moving_the_new_folder_in_puts_the_old_one_back(tmp_path, monkeypatch):
    target = tmp_path / "model"
    write_folder(target, {"a.txt": "old"})
    fail_renames(monkeypatch, target, back_too=False)
    with pytest.raises(OSError, match="simulated failure"):
        write_folder(target, {"a.txt": "new"})
    assert folder_text(target) == {"a.txt": "old"}
    assert [p.name for p in tmp_path.iterdir()] == ["model"]


def test_a_crash_between_the_renames_is_recovered(tmp_path, monkeypatch):
    """Cut off after the old folder went aside and before the new one came in (putting the old
    one back fails too): `recover_dir`, or the next write, brings the old folder back."""
    target = tmp_path / "model"
    write_folder(target, {"a.txt": "old"})
    fail_renames(monkeypatch, target, back_too=True)
    with pytest.raises(OSError, match="simulated failure"):
        write_folder(target, {"a.txt": "new"})
    monkeypatch.undo()
    assert not target.exists() and len(list(tmp_path.iterdir())) == 1  # the old one, aside
    recover_dir(target)
    assert folder_text(target) == {"a.txt": "old"}
    assert [p.name for p in tmp_path.iterdir()] == ["model"]
    recover_dir(target)  # nothing left to recover: a no-op
    assert folder_text(target) == {"a.txt": "old"}


def test_the_next_write_recovers_first(tmp_path, monkeypatch):
    target = tmp_path / "model"
    write_folder(target, {"a.txt": "old"})
    fail_renames(monkeypatch, target, back_too=True)
    with pytest.raises(OSError):
        write_folder(target, {"a.txt": "new"})
    monkeypatch.undo()
    write_folder(target, {"a.txt": "newer"})
    assert folder_text(target) == {"a.txt": "newer"}
    assert [p.name for p in tmp_path.iterdir()] == ["model"]


def test_a_crash_before_the_old_folder_is_deleted_keeps_the_new_one(tmp_path, monkeypatch):
    target = tmp_path / "model"
    write_folder(target, {"a.txt": "old"})
    real = shutil.rmtree

    def rmtree(path, *args, **kwargs):
        if Path(path).name.endswith(".old"):
            raise OSError("simulated crash while deleting the old folder")
        real(path, *args, **kwargs)

    monkeypatch.setattr(shutil, "rmtree", rmtree)
    with pytest.raises(OSError, match="simulated crash"):
        write_folder(target, {"a.txt": "new"})
    monkeypatch.undo()
    assert folder_text(target) == {"a.txt": "new"}
    recover_dir(target)
    assert folder_text(target) == {"a.txt": "new"}
    assert [p.name for p in tmp_path.iterdir()] == ["model"]
