"""Paper scale: real items shown as sentences and floor maps, answered by the methods that can
read them, and the table's per-dataset columns (NaN where a dataset or method cannot)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from reprolab.studies.visual_queries import real_jobs, workflow_io
from reprolab.studies.visual_queries.item_files import read_items
from reprolab.studies.visual_queries.items import FAMILIES, MODES
from reprolab.studies.visual_queries.real_views import RealView, clevrer_text, parse_text
from reprolab.studies.visual_queries.results import columns, records

from .real_data import decode, ssv2_entries, write_json, write_mp4_video, write_webm
from .test_clevrer_items import _random_scene
from .test_ssv2 import LABELS

RENDER = {"jitter": 1.0, "scale_jitter": 0.1}


def test_clevrer_sentences_drop_ids_and_parse_back():
    state = ((0, 5, 8), (3, 1, 0))
    text = clevrer_text(state)
    assert "x3 y3" in text and "x1 y1" in text and "0" not in text.replace("x", "").split()
    assert parse_text(text) == RealView("clevrer").key(state)
    assert clevrer_text(((7, 5, 8), (1, 1, 0))) == text  # ids never show
    with pytest.raises(ValueError, match="expected '<colour> <material> <shape> at xN yN'"):
        parse_text("red cube x1 y1")


def test_floor_maps_differ_by_scene_and_are_seeded():
    view = RealView("clevrer", image_size=48)
    from reprolab.studies.visual_queries.real_views import floor_map

    a, b = ((0, 5, 8), (1, 1, 0)), ((0, 5, 0), (1, 1, 8))
    assert floor_map(a, 0, 48).shape == (48, 48, 3)
    assert not np.array_equal(floor_map(a, 0, 48), floor_map(b, 0, 48))
    assert np.array_equal(floor_map(a, 3, 48, 1.0, 0.1), floor_map(a, 3, 48, 1.0, 0.1))
    assert view.modes == ("text", "visual") and RealView("ssv2", {}).modes == ("text",)


@pytest.fixture(scope="module")
def paper_dir(tmp_path_factory):
    """A working folder laid out as the rules write it: both real datasets' frames and one
    seed's items of each."""
    root = tmp_path_factory.mktemp("paper")
    videos, annotations = root / "raw/clevrer/videos", root / "raw/clevrer/annotations"
    videos.mkdir(parents=True)
    for index in range(12):
        write_mp4_video(videos / f"video_{10000 + index:05d}.mp4", 32)
        write_json(annotations / f"x/annotation_{10000 + index:05d}.json", _random_scene(index))
    decode(videos, root / workflow_io.frames_dir("clevrer"), 8, ".mp4")
    ssv2 = root / "raw/ssv2/videos"
    ssv2.mkdir(parents=True)
    entries = ssv2_entries(16, LABELS)
    for entry in entries:
        write_webm(ssv2 / f"{entry['id']}.webm", 24)
    decode(ssv2, root / workflow_io.frames_dir("ssv2"), 8, ".webm")
    params = {
        "n_test": 6,
        "items": {"vfp_context": 3, "vfp_horizon": 3},
        "render": RENDER,
        "hf_vlm": {"path": "unused", "device": "cpu", "dtype": "float32"},
        "real_items": {
            "clevrer": {"annotations": str(annotations), "floor": [-3.0, 3.0], "image_size": 48},
            "ssv2": {
                "labels": str(write_json(root / "labels.json", LABELS)),
                "split": str(write_json(root / "validation.json", entries)),
            },
        },
    }
    for dataset in workflow_io.DATASETS:
        out = root / workflow_io.items_path(dataset, 0)
        real_jobs.make_real_items(
            dataset, root / workflow_io.frames_dir(dataset), 0, params, out.parent
        )
    return root, params


class FakeVLM:
    """Picks the option whose text or image comes first in sorted order, seeing the frames."""

    def __init__(self):
        self.frames = []

    def answer(self, frames, question, options):
        self.frames.append(frames.shape)
        keys = [o if isinstance(o, str) else o.tobytes() for o in options]
        return int(np.argmin(keys))


def test_every_method_writes_every_real_cell_nan_where_it_cannot(paper_dir):
    root, params = paper_dir
    fake = FakeVLM()
    results = {}
    for method in [*real_jobs.APPLICABLE, *real_jobs.NOT_APPLICABLE]:
        results[method] = real_jobs.answer_real_datasets(method, 0, params, lambda: fake, root)
    keys = {f"{d}_{f}_acc_{m}" for d in workflow_io.DATASETS for f in FAMILIES for m in MODES}
    for method, (metrics, rows) in results.items():
        assert keys <= metrics.keys(), method
        if method in real_jobs.NOT_APPLICABLE:
            assert all(math.isnan(metrics[k]) for k in keys) and not rows
            assert set(metrics["not_applicable"]) == set(workflow_io.DATASETS)
        assert all(math.isnan(metrics[f"ssv2_{f}_acc_{m}"]) for f in ("tfr", "cmd") for m in MODES)
        assert math.isnan(metrics["ssv2_vfp_acc_visual"])
    oracle = results["oracle"][0]
    assert all(oracle[f"clevrer_{f}_acc_{m}"] == 100.0 for f in FAMILIES for m in MODES)
    assert oracle["ssv2_vfp_acc_text"] == 100.0
    blind = results["blind"][0]
    assert math.isnan(blind["clevrer_tfr_acc_visual"]) and not math.isnan(
        blind["clevrer_tfr_acc_text"]
    )
    assert "clevrer" in blind["not_applicable"] and "ssv2" not in blind["not_applicable"]
    hf = results["hf_vlm"][0]
    assert not math.isnan(hf["clevrer_cmd_acc_visual"]) and fake.frames
    assert all(shape[1:] == (16, 16, 3) for shape in fake.frames)
    test = read_items(root / workflow_io.items_path("clevrer", 0))["test"]
    assert {r["item"] for r in results["hf_vlm"][1]} >= {f"clevrer/{i.id}" for i in test}


def test_the_run_job_answers_real_items_only_when_params_name_them(
    paper_dir, tmp_path, monkeypatch
):
    """jobs.run_method adds the real datasets' cells to metrics.json at paper scale."""
    from reprolab.studies.visual_queries import jobs

    root, params = paper_dir
    monkeypatch.chdir(root)
    splits = {"train": [], "test": []}  # no sprite items: the oracle reads no corpus
    metrics = jobs.run_method("oracle", None, splits, 0, params, {}, 1, tmp_path / "run")
    assert metrics["clevrer_tfr_acc_visual"] == 100.0 and metrics["ssv2_n_test"] > 0
    written = json.loads((tmp_path / "run/metrics.json").read_text(), parse_constant=float)
    assert "ssv2_tfr_acc_text" in written
    plain = {k: v for k, v in params.items() if k != "real_items"}
    metrics = jobs.run_method("oracle", None, splits, 0, plain, {}, 1, tmp_path / "plain")
    assert not any(k.startswith(("clevrer_", "ssv2_")) for k in metrics)


def test_table_has_per_dataset_columns_at_paper_scale_only():
    assert columns() == [f"{f.upper()}: {w}" for f in FAMILIES for w in ("text", "visual", "Δ")]
    paper = columns(["clevrer", "ssv2"])
    assert len(paper) == 27 and "CLEVRER TFR: visual" in paper and "SSV2 CMD: Δ" in paper
    run = {
        f"{p}{f}_acc_{m}": 50.0 for p in ("", "clevrer_", "ssv2_") for f in FAMILIES for m in MODES
    }
    run["ssv2_tfr_acc_text"] = float("nan")
    params = {"methods": ["oracle"], "real_items": {"clevrer": {}, "ssv2": {}}}
    cells = {r.column: r.value for r in records(params, {"oracle": [run]}, [0])}
    assert set(cells) == set(paper) and math.isnan(cells["SSV2 TFR: text"])
    assert cells["CLEVRER VFP: Δ"] == 0.0
    del params["real_items"]
    assert {r.column for r in records(params, {"oracle": [run]}, [0])} == set(columns())
