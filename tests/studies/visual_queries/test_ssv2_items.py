"""Action anticipation items on SSv2: four templates, exchangeable, from real label files."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from reprolab.studies.visual_queries.item_files import read_items
from reprolab.studies.visual_queries.ssv2 import Ssv2Video
from reprolab.studies.visual_queries.ssv2_items import build_items, make_items, template_state

from .real_data import decode, ssv2_entries, write_json, write_webm
from .test_ssv2 import LABELS

CFG = {"vfp_context": 3, "vfp_horizon": 2}


def pool(n: int, classes: list[int]) -> dict[str, Ssv2Video]:
    return {
        str(k): Ssv2Video(str(k), "Moving [something] up", classes[k % len(classes)], ("a",))
        for k in range(n)
    }


def test_items_hold_the_video_template_and_three_others():
    videos = pool(20, [0, 1, 2, 3, 4, 5])
    items, skipped = build_items(videos, sorted(videos), 0, CFG)
    assert len(items) + skipped["vfp"] == 20 and items
    for item in items:
        assert item.family == "vfp" and item.n_frames == 3
        assert item.truth == template_state(videos[item.video].class_index)
        assert item.options[item.answer_idx] == item.truth and len(set(item.options)) == 4
        for state, source in zip(item.options, item.sources, strict=True):
            assert state == template_state(videos[source].class_index)
    assert build_items(videos, sorted(videos), 0, CFG) == (items, skipped)


def test_an_item_whose_templates_repeat_is_skipped_not_redrawn():
    items, skipped = build_items(pool(10, [0, 1, 2]), [str(k) for k in range(10)], 0, CFG)
    assert items == [] and skipped == {"vfp": 10}


def test_the_options_alone_do_not_give_the_answer_away():
    rng = np.random.default_rng(0)
    classes = rng.zipf(1.6, size=600) % 40  # skewed template frequencies, as in SSv2
    videos = {str(k): Ssv2Video(str(k), "t", int(c), ()) for k, c in enumerate(classes)}
    items, _ = build_items(videos, sorted(videos), 0, CFG)
    frequency = Counter(int(c) for c in classes)
    hits = [
        int(np.argmax([frequency[o[0][1]] for o in item.options]) == item.answer_idx)
        for item in items
    ]
    sigma = 100 * np.sqrt(0.25 * 0.75 / len(items))
    assert abs(100 * np.mean(hits) - 25) < 3 * sigma  # "pick the commonest template" is chance


def test_make_items_reads_webm_clips_and_the_label_files(tmp_path):
    videos = tmp_path / "videos"
    videos.mkdir()
    entries = ssv2_entries(17, LABELS)
    for entry in entries[:-1]:  # the last one was never downloaded
        write_webm(videos / f"{entry['id']}.webm", 24)
    labels = write_json(tmp_path / "something-something-v2-labels.json", LABELS)
    split = write_json(tmp_path / "something-something-v2-validation.json", entries)
    frames = decode(videos, tmp_path / "frames", 8, ".webm")
    params = {"n_test": 6, "items": CFG}
    summary = make_items(labels, split, frames, 0, params, tmp_path / "seed0")
    splits = read_items(tmp_path / "seed0" / "items.jsonl")
    assert summary["missing_videos"] == 1 and summary["families"] == ["vfp"]
    assert summary["items"] == {part: len(items) for part, items in splits.items()}
    assert summary["items"]["train"] + summary["skipped"]["train"]["vfp"] == 10
    assert summary["items"]["train"] > 0 and summary["items"]["test"] > 0
    assert all(item.video in {e["id"] for e in entries} for item in splits["train"])
    with pytest.raises(ValueError, match="vfp_context 8 shows every frame of the clip of 100"):
        make_items(labels, split, frames, 0, {"n_test": 3, "items": {"vfp_context": 8}}, tmp_path)
