import json
import time
from pathlib import Path

import numpy as np
import pytest

from reprolab.core.io import atomic_path, dumps_json, read_h5, read_json, write_h5, write_json


def test_json_is_canonical():
    text = dumps_json({"b": np.float32(0.1), "a": [1.0 / 3.0, float("nan")], "c": np.arange(2)})
    assert text == dumps_json({"c": [0, 1], "a": [1.0 / 3.0, None], "b": np.float32(0.1)})
    data = json.loads(text)
    assert list(data) == ["a", "b", "c"]
    assert data["a"] == [0.3333333333, None]


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
