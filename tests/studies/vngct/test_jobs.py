"""The study's jobs: params checks, the aligned-model artifact and a run's metrics file."""

from __future__ import annotations

import copy
import dataclasses

import pytest

from reprolab.core.io import read_json
from reprolab.core.params import ParamsError, check_section, load_schema
from reprolab.studies.vngct.continual import Training
from reprolab.studies.vngct.jobs import load_model, run_method
from reprolab.studies.vngct.workflow_io import check_params
from tests.conftest import study_section
from tests.studies.vngct.specs import PARAMS, untuned

PARAMS_LORA = PARAMS["lora"]
VNGCT, RANDOM, SEQFT = (untuned(m) for m in ("vngct", "random_gate", "seqft"))
STREAMS = {"synthcit": {"synthetic": {}}}


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"stream": "coin"}, "vngct.stream: 'coin' is not an instr.streams entry"),
        ({"methods": ["seqft", "random_gate"]}, "random_gate matches vngct's routing"),
    ],
)
def test_check_params_names_the_bad_key(change, expected):
    with pytest.raises(ValueError, match=expected.replace("[", r"\[").replace("]", r"\]")):
        check_params({**PARAMS, **change}, STREAMS)


def test_check_params_accepts_the_defaults():
    check_params(PARAMS, STREAMS)


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("methods", ["seqft", "lwf"], r"key 'vngct.methods.1': 'lwf' is not one of"),
        ("lora", {**PARAMS_LORA, "rank": -1}, r"key 'vngct.lora.rank': -1 is less than"),
        ("lora", {**PARAMS_LORA, "dropout": 1.0}, r"key 'vngct.lora.dropout'"),
        ("training", {**PARAMS["training"], "gate_typo": 1.0}, r"'gate_typo' was unexpected"),
    ],
)
def test_params_schema_checks_what_check_params_no_longer_does(key, value, expected):
    params = {**study_section("vngct", "ci"), key: value}
    with pytest.raises(ParamsError, match=expected):
        check_section(params, "vngct")


def test_params_schema_lists_the_fields_of_the_training_config():
    """Jobs build `Training(**params['training'])`: the schema's keys must be its fields (the
    shared `lora` definition: tests/models/test_lora.py)."""
    spec = load_schema("studies/vngct.schema.yaml")["properties"]["training"]
    assert sorted(spec["properties"]) == sorted(f.name for f in dataclasses.fields(Training))


def test_align_saves_a_loadable_model_and_its_losses(aligned):
    folder, summary = aligned
    assert (folder / "config.json").is_file() and (folder / "model.safetensors").is_file()
    assert summary["steps"] == 3
    assert read_json(folder / "align_summary.json") == pytest.approx(summary)


def test_run_writes_identical_metrics_twice_and_the_random_gate_copies_rates(
    aligned, stream_yaml, tmp_path, torch_one_thread
):
    folder, _ = aligned
    first = run_method("vngct", stream_yaml, folder, 0, PARAMS, 1, tmp_path / "a", tuning=VNGCT)
    run_method("vngct", stream_yaml, folder, 0, PARAMS, 1, tmp_path / "b", tuning=VNGCT)
    assert (tmp_path / "a/metrics.json").read_bytes() == (tmp_path / "b/metrics.json").read_bytes()
    assert first["tasks"] == ["where", "plus"] and "task_metrics" not in first
    assert len(first["accuracy"]["all"]) == 2 and len(first["routing"]) == 2
    assert len(first["swap"]["final_projector"]) == 1
    where, plus = first["held_out_necessity"]  # position items all need the image, arith none
    assert plus["auroc"] != plus["auroc"] and where["text_mean"] != where["text_mean"]
    with pytest.raises(ValueError, match="random_gate needs the metrics of vngct"):
        run_method("random_gate", stream_yaml, folder, 0, PARAMS, 1, tmp_path / "c", tuning=RANDOM)
    matched = run_method(
        "random_gate",
        stream_yaml,
        folder,
        0,
        PARAMS,
        1,
        tmp_path / "c",
        tmp_path / "a/metrics.json",
        tuning=RANDOM,
    )
    assert matched["method"] == "random_gate"


def test_a_local_checkpoint_runs_with_lora_its_processor_and_no_network(
    aligned, stream_yaml, tmp_path, torch_one_thread, no_network
):
    """Paper scale's path: a saved LLaVA folder (here the aligned tiny one) is the checkpoint;
    the run uses the folder's tokenizer and image processor and LoRA on its language model."""
    folder, _ = aligned
    params = copy.deepcopy(PARAMS)
    params["checkpoint"] = str(folder)
    params["lora"]["rank"] = 2
    params["runtime"]["cache_features"] = False
    adapter, processor = load_model(folder, params, 0)
    names = {name for name, p in adapter.named_parameters() if p.requires_grad}
    language = {n for n in names if ".language_model." in n or n.startswith("model.lm_head")}
    assert language and all("lora_" in n for n in language)
    assert any("multi_modal_projector" in n for n in names)
    assert processor.tokenizer.convert_tokens_to_ids("<image>") == adapter.image_token_id
    out = run_method("seqft", stream_yaml, folder, 0, params, 1, tmp_path / "lora", tuning=SEQFT)
    assert out["tasks"] == ["where", "plus"] and len(out["accuracy"]["all"]) == 2
    run_method("seqft", stream_yaml, folder, 0, params, 1, tmp_path / "lora2", tuning=SEQFT)
    once, twice = (tmp_path / name / "metrics.json" for name in ("lora", "lora2"))
    assert once.read_bytes() == twice.read_bytes()
    full = run_method("seqft", stream_yaml, folder, 0, PARAMS, 1, tmp_path / "full", tuning=SEQFT)
    assert full["train_loss"] != out["train_loss"]


def test_declared_metrics_score_generated_answers_and_are_recorded(
    aligned, stream_yaml, tmp_path, torch_one_thread
):
    """Paper scale's scoring on the tiny stream: answers are generated and scored by the
    declared metric, and metrics.json says which metric each task's scores are."""
    folder, _ = aligned
    declared = {"where": "vqa_accuracy", "plus": "vqa_accuracy"}
    params = {**PARAMS, "scoring": {"max_new_tokens": 3, "metrics": declared}}
    out = run_method("seqft", stream_yaml, folder, 0, params, 1, tmp_path / "s", tuning=SEQFT)
    assert out["task_metrics"] == declared
    assert read_json(tmp_path / "s/metrics.json")["task_metrics"] == declared
    assert all(0.0 <= score <= 1.0 for row in out["accuracy"]["all"] for score in row)


def test_the_paper_scale_declares_a_metric_for_every_coin_task():
    paper = study_section("vngct", "paper")
    check_section(paper, "vngct")
    coin = ["ScienceQA", "TextVQA", "ImageNet", "GQA", "VizWiz", "Grounding", "VQAv2", "OCR-VQA"]
    assert sorted(paper["scoring"]["metrics"]) == sorted(coin)
    assert paper["scoring"]["metrics"]["Grounding"] == "iou"
    assert "scoring" not in study_section("vngct", "smoke")
    assert "scoring" not in study_section("vngct", "ci")
