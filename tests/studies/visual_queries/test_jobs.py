"""Jobs: item files of a seed, one backend's run files, the hf_vlm path on a tiny LLaVA."""

from __future__ import annotations

import copy
import hashlib

import pandas as pd
import pytest

from reprolab.core.io import read_json
from reprolab.core.params import ParamsError, check_section
from reprolab.models.tiny_vlm import build_tiny_llava, build_tokenizer, save_tiny_vlm
from reprolab.preprocess.video.synth import CELL_NAMES, COLOUR_NAMES, SHAPES
from reprolab.studies.visual_queries.item_files import read_items
from reprolab.studies.visual_queries.jobs import make_items, run_method
from reprolab.studies.visual_queries.workflow_io import check_params
from tests.conftest import study_section

from .conftest import PARAMS, SELECTED

pytestmark = pytest.mark.usefixtures("torch_one_thread")


@pytest.fixture(scope="module")
def item_dir(corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("items")
    summary = make_items(corpus, 0, PARAMS, out)
    return out, summary


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_make_items_writes_both_modes_and_is_deterministic(corpus, item_dir, tmp_path):
    out, summary = item_dir
    assert summary["items"]["test"] + sum(summary["skipped"]["test"].values()) == 3 * 12
    make_items(corpus, 0, PARAMS, tmp_path)
    for name in ("items.jsonl", "benchmark_text.jsonl", "benchmark_visual.jsonl", "options.h5"):
        assert _sha(out / name) == _sha(tmp_path / name)
    text = pd.read_json(out / "benchmark_text.jsonl", lines=True)
    visual = pd.read_json(out / "benchmark_visual.jsonl", lines=True)
    assert (text["state_id"] == visual["state_id"]).all()
    assert (text["answer_idx"] == visual["answer_idx"]).all()
    assert visual["options"][0][1] == {"type": "image", "path": "options.h5", "row": 0, "slot": 1}


def test_run_method_writes_metrics_and_predictions(corpus, item_dir, tmp_path):
    splits = read_items(item_dir[0] / "items.jsonl")
    metrics = run_method(
        "oracle", corpus, splits, 0, PARAMS, SELECTED, 1, tmp_path, show_progress=False
    )
    assert metrics["tfr_acc_text"] == 100.0 and metrics["cmd_acc_visual"] == 100.0
    assert read_json(tmp_path / "metrics.json")["n_test"] == len(splits["test"])
    predictions = pd.read_csv(tmp_path / "predictions.csv")
    assert len(predictions) == 2 * len(splits["test"])
    with pytest.raises(ValueError, match="unknown visual_queries method 'gpt'"):
        run_method("gpt", corpus, splits, 0, PARAMS, SELECTED, 1, tmp_path)


def test_tinyvlm_run_reports_its_losses(corpus, item_dir, tmp_path):
    splits = read_items(item_dir[0] / "items.jsonl")
    metrics = run_method(
        "tinyvlm", corpus, splits, 0, PARAMS, SELECTED, 1, tmp_path, show_progress=False
    )
    assert set(metrics["final_loss"]) == {"align", "tune"}
    assert metrics["parameters"] > 0


def test_hf_vlm_backend_answers_through_a_local_tiny_llava(corpus, item_dir, tmp_path, no_network):
    words = [*COLOUR_NAMES, *SHAPES, *CELL_NAMES, "which", "scene", "comes", "after", "the"]
    tokenizer = build_tokenizer(words)
    model, processor = build_tiny_llava(tokenizer, seed=0, image_size=32)
    folder = save_tiny_vlm(model, processor, tmp_path / "tiny_llava")
    params = copy.deepcopy(PARAMS)
    params["hf_vlm"]["path"] = str(folder)
    splits = read_items(item_dir[0] / "items.jsonl")
    splits["test"] = splits["test"][:4]
    metrics = run_method("hf_vlm", corpus, splits, 0, params, {}, 1, tmp_path / "run")
    assert metrics["model"] == str(folder)
    predictions = pd.read_csv(tmp_path / "run" / "predictions.csv")
    assert len(predictions) == 8 and predictions["predicted"].between(0, 3).all()


def test_check_params_names_the_key():
    videos = {"sprites": {"seed": 0, "synthetic": {}}, "real": {"videos": "x"}}
    assert check_params({**PARAMS, "dataset": "sprites", "methods": ["oracle"]}, videos) == {}
    with pytest.raises(ValueError, match="visual_queries.dataset: 'nope'"):
        check_params({**PARAMS, "dataset": "nope", "methods": ["oracle"]}, videos)
    with pytest.raises(ValueError, match="real videos"):
        check_params({**PARAMS, "dataset": "real", "methods": ["oracle"]}, videos)


def test_params_schema_checks_the_hf_vlm_path_and_the_methods():
    """An empty hf_vlm.path with the hf_vlm method listed, once check_params's, is the schema's."""
    values = study_section("visual_queries", "ci")
    no_path = {**values["hf_vlm"], "path": ""}
    check_section({**values, "methods": ["oracle"], "hf_vlm": no_path}, "visual_queries")
    with pytest.raises(ParamsError, match=r"key 'visual_queries.hf_vlm.path'.*hf_vlm method"):
        check_section({**values, "methods": ["hf_vlm"], "hf_vlm": no_path}, "visual_queries")
    with pytest.raises(ParamsError, match=r"key 'visual_queries.methods.0': 'gpt' is not one of"):
        check_section({**values, "methods": ["gpt"]}, "visual_queries")
