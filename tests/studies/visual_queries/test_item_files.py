"""items.jsonl round-trips; a damaged line is named with its file and line number."""

from __future__ import annotations

import pytest

from reprolab.preprocess.video.synth import SceneSpec, simulate
from reprolab.studies.visual_queries.item_files import read_items, write_items
from reprolab.studies.visual_queries.items import build_split

SPEC = SceneSpec(radius=4.5)
CFG = {"vfp_context": 8, "vfp_horizon": 6}


def _items(start: int):
    scenes = {f"v{seed}": simulate(seed, SPEC) for seed in range(start, start + 8)}
    return build_split(scenes, sorted(scenes), SPEC, start, CFG)[0]


def test_items_round_trip_per_split(tmp_path):
    splits = {"train": _items(0), "test": _items(10)}
    assert splits["train"] and splits["test"]
    write_items(tmp_path / "items.jsonl", splits)
    assert read_items(tmp_path / "items.jsonl") == splits
    assert any(item.sources[0] != item.video for item in splits["test"])


def test_a_bad_line_is_named(tmp_path):
    path = tmp_path / "items.jsonl"
    write_items(path, {"test": _items(0)[:2]})
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0], '{"id": "x"}', "not json"]) + "\n")
    with pytest.raises(ValueError, match=r"items.jsonl, line 2: not an item record"):
        read_items(path)
