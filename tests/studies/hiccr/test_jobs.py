"""hiccr's jobs end to end on a tiny stream: the warm start saves a checkpoint only when its
gates hold, tuning writes a record, and a run is repeatable byte for byte."""

from __future__ import annotations

import copy
import hashlib
from pathlib import Path

import pytest
import torch

from reprolab.core.io import read_h5, read_json
from reprolab.core.tuning import read_tuning
from reprolab.studies.hiccr.jobs import (
    GateError,
    load_data,
    rl_run,
    run_seed,
    trainable_policy,
    tune_base,
    warm_start,
)
from tests.studies.hiccr.paper_files import paper_params

PARAMS = {
    "model": {"hidden": 32, "layers": 2, "heads": 2, "patch_size": 8},
    "sft": {
        "seed": 0,
        "lr": 0.01,
        "batch_size": 8,
        "steps": 30,
        "eval_every": 20,
        "corruption": 0.3,
        "gate": {"accuracy": [0.0, 1.0], "min_dependence": -1.0},
    },
    "rl": {
        "steps": 2,
        "prompts": 2,
        "group_size": 4,
        "temperature": 1.0,
        "last_layers": 2,
        "eval_every": 1,
        "curve_items": 4,
    },
    "credit": {
        "alpha": 0.5,
        "beta": 0.5,
        "token_clip": [0.2, 3.0],
        "trajectory_clip": [0.5, 2.0],
        "pos_only": False,
        "clip_eps": 0.2,
    },
    "eval": {"batch_size": 5},
    "tune": {"grid": {"grpo": {"lr": [0.001, 0.01]}, "drgrpo": {"lr": [0.001, 0.01]}}},
}


@pytest.fixture(scope="module")
def checkpoint(stream_path, tmp_path_factory, torch_one_thread) -> Path:
    folder = tmp_path_factory.mktemp("hiccr")
    warm_start(PARAMS, stream_path, folder / "sft", folder / "sft.json", 1)
    return folder / "sft"


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_the_warm_start_records_its_gates_and_the_checkpoints_test_metrics(checkpoint):
    record = read_json(checkpoint.parent / "sft.json")
    assert record["steps"] == 30 and [point["step"] for point in record["curve"]] == [20, 30]
    assert set(record["test"]) >= {"accuracy", "dependence", "attention", "gradient_share"}
    assert set(record["gate"]) == {*record["test"], "sampled_accuracy"}
    assert 0.0 < record["corrupted_digits"] < 1.0
    assert (checkpoint / "config.json").is_file()


def test_a_warm_start_outside_its_gates_fails_and_saves_nothing(stream_path, tmp_path):
    params = copy.deepcopy(PARAMS)
    params["sft"]["gate"]["min_dependence"] = 0.9
    with pytest.raises(GateError, match=r"image dependence .* below sft.gate.min_dependence 0.9"):
        warm_start(params, stream_path, tmp_path / "sft", tmp_path / "s.json", 1)
    assert not (tmp_path / "sft").exists() and not (tmp_path / "s.json").exists()


def test_tuning_and_runs_write_their_records_repeatably(stream_path, checkpoint, tmp_path):
    stream, record = stream_path, checkpoint.parent / "sft.json"
    tuned = tmp_path / "grpo.json"
    tuning = tune_base(PARAMS, "grpo", [1000], stream, checkpoint, tuned, 1)
    assert read_tuning(tuned)["selected"] == tuning["selected"]
    assert tuning["selected"]["lr"] in PARAMS["tune"]["grid"]["grpo"]["lr"]
    outputs = []
    for attempt in ("a", "b"):
        metrics, curves = tmp_path / f"{attempt}.json", tmp_path / f"{attempt}.h5"
        run_seed(PARAMS, "hiccr", 0, stream, checkpoint, record, [tuned], metrics, curves, 1)
        outputs.append((digest(metrics), digest(curves)))
    assert outputs[0] == outputs[1]
    written = read_json(tmp_path / "a.json")
    assert written["warm_start"]["steps"] == read_json(record)["steps"]
    assert "curve" not in written["warm_start"]
    first_batch = written["first_batch"]
    assert first_batch["reduces_to_base"] is True
    assert first_batch["operations"] > first_batch["base_operations"]  # HiCCR adds work
    curve = read_h5(tmp_path / "a.h5")
    assert list(curve["step"]) == [0, 1, 2] and len(curve["reward"]) == 2
    with pytest.raises(ValueError, match="no tuning record of drgrpo_hiccr's base drgrpo"):
        run_seed(PARAMS, "drgrpo_hiccr", 0, stream, checkpoint, record, [tuned], metrics, curves, 1)


def test_a_run_from_the_callers_loaded_policy_is_the_run_that_loads_it(stream_path, checkpoint):
    """run_seed hands rl_run the policy its first-batch checks used (left in train mode here):
    loading draws no random numbers and rl_run puts the model back in eval mode, so the curve,
    the rewards and the trained weights are those of a run that loads the checkpoint itself."""
    policy, tokenizer, processor = trainable_policy(checkpoint, PARAMS, 0)
    data = load_data(PARAMS, stream_path, processor)
    curve_split = data.test.subset(range(4))
    policy.model.train()
    runs = [
        rl_run(PARAMS, "hiccr", 0, 0.01, checkpoint, data, curve_split, 1, loaded)
        for loaded in (None, (policy, tokenizer))
    ]
    (fresh, _, fresh_curve, fresh_rewards), (reused, _, reused_curve, reused_rewards) = runs
    assert fresh is not reused and reused is policy
    assert fresh_curve == reused_curve and fresh_rewards == reused_rewards
    fresh_weights, reused_weights = fresh.model.state_dict(), reused.model.state_dict()
    assert all(torch.equal(fresh_weights[name], reused_weights[name]) for name in fresh_weights)


def test_the_paper_path_runs_on_a_released_checkpoint_and_benchmark_files(tmp_path):
    """The paper-scale path in miniature: the released checkpoint is the warm start (gated, no
    training), LoRA adapters train under RL on ViRL39K items, MathVista items are the test."""
    params = paper_params(PARAMS, tmp_path / "release")
    warm = warm_start(params, "", tmp_path / "sft", tmp_path / "sft.json", 1)
    assert warm["steps"] == 0 and warm["corrupted_digits"] is None
    assert [point["step"] for point in warm["curve"]] == [0]
    assert (tmp_path / "sft" / "config.json").is_file()
    tuned = tmp_path / "grpo.json"
    tune_base(params, "grpo", [1000], "", tmp_path / "sft", tuned, 1)
    outputs = []
    for attempt in ("a", "b"):
        metrics, curves = tmp_path / f"{attempt}.json", tmp_path / f"{attempt}.h5"
        run_seed(
            params,
            "hiccr",
            0,
            "",
            tmp_path / "sft",
            tmp_path / "sft.json",
            [tuned],
            metrics,
            curves,
            1,
        )
        outputs.append((digest(metrics), digest(curves)))
    assert outputs[0] == outputs[1]
    written = read_json(tmp_path / "a.json")
    assert written["first_batch"]["reduces_to_base"] is True
    assert set(written["test"]) >= {"accuracy", "dependence", "attention", "gradient_share"}
    assert 0.0 < written["test"]["attention"] < 1.0
    policy, _, _ = trainable_policy(tmp_path / "sft", params, 0)
    trained = [name for name, p in policy.model.named_parameters() if p.requires_grad]
    assert trained and all(".lora_" in name for name in trained)
