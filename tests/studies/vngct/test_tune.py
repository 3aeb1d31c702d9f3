"""The vngct_tune job: grids checked, values applied, held-out items scored, records written."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from reprolab.core.io import read_json
from reprolab.core.tuning import read_tuning, write_tuning
from reprolab.studies.vngct import continual
from reprolab.studies.vngct.jobs import run_method
from reprolab.studies.vngct.tune import applied_training, split_rows, tune_method, tuned_training
from reprolab.studies.vngct.workflow_io import check_params
from tests.conftest import study_section
from tests.studies.vngct.specs import PARAMS, untuned

STREAMS = {"synthcit": {"synthetic": {}}}
SEEDS = [1000, 1001]


def with_tune(**change):
    params = copy.deepcopy(PARAMS)
    params["tune"].update(change)
    return params


@pytest.mark.parametrize(
    ("params", "expected"),
    [
        (
            with_tune(grid={m: g for m, g in PARAMS["tune"]["grid"].items() if m != "ewc"}),
            r"vngct.tune.grid: no grid for method\(s\) \[.ewc.\]",
        ),
        (
            with_tune(grid={**PARAMS["tune"]["grid"], "ewc": {"ewc_strength": [1.0, 10.0, 100.0]}}),
            "every method needs the same number of grid points",
        ),
        (with_tune(train_fraction=0.8, validation_fraction=0.3), "exceed the training split"),
    ],
)
def test_check_params_requires_alike_grids(params, expected):
    with pytest.raises(ValueError, match=expected):
        check_params(params, STREAMS)


def test_every_scale_gives_every_method_a_grid_of_one_size():
    """params.yaml itself: the same grid size for every method at each scale; EWC tunes its
    strength, every other method the same learning-rate factors."""
    for scale in ("ci", "smoke", "paper"):
        section = study_section("vngct", scale)
        check_params(section, {section["stream"]: {}})
    grid = study_section("vngct", "smoke")["tune"]["grid"]
    assert "ewc_strength" in grid["ewc"]
    others = [m for m in grid if m != "ewc"]
    assert all(grid[m] == grid["vngct"] and "lr_scale" in grid[m] for m in others)


def test_tuned_training_scales_the_learning_rates_and_replaces_fields():
    training = PARAMS["training"]
    out = tuned_training(training, {"lr_scale": 2.0, "ewc_strength": 3.0})
    assert out["lr_language"] == 2 * training["lr_language"]
    assert out["lr_visual"] == 2 * training["lr_visual"]
    assert out["lr_calibration"] == 2 * training["lr_calibration"]
    assert out["ewc_strength"] == 3.0 and out["gate_floor"] == training["gate_floor"]
    assert tuned_training(training, {}) == training
    with pytest.raises(ValueError, match="'lr' is neither lr_scale nor a training field"):
        tuned_training(training, {"lr": 0.1})
    with pytest.raises(ValueError, match="tuning record of 'ewc' given to a run of 'seqft'"):
        applied_training(training, untuned("ewc"), "seqft")


def test_split_rows_are_disjoint_seeded_and_sized():
    fit, held = split_rows(400, 0.4, 0.25, 1000, "digit")
    assert len(fit) == 160 and len(held) == 100 and not set(fit) & set(held)
    again = split_rows(400, 0.4, 0.25, 1000, "digit")
    assert all(np.array_equal(a, b) for a, b in zip((fit, held), again, strict=True))
    other = split_rows(400, 0.4, 0.25, 1001, "digit")
    assert not np.array_equal(held, other[1])
    assert len(split_rows(3, 0.1, 0.1, 0, "t")[1]) == 1  # at least one row each
    with pytest.raises(ValueError, match="task t: 2 training items cannot give 2 \\+ 1"):
        split_rows(2, 0.9, 0.05, 0, "t")


@pytest.fixture(scope="module")
def vngct_record(aligned, stream_yaml, torch_one_thread):
    folder, _ = aligned
    return tune_method("vngct", stream_yaml, folder, PARAMS, SEEDS, 1)


def test_tune_scores_every_point_on_every_tuning_seed(vngct_record, tmp_path):
    record = vngct_record
    assert record["method"] == "vngct" and record["tuning_seeds"] == SEEDS
    assert record["metric"] == "average_accuracy" and record["goal"] == "max"
    assert [t["values"] for t in record["trials"]] == [
        {"calibration_weight": 0.0},
        {"calibration_weight": 1.0},
    ]
    assert all(len(t["per_seed"]) == 2 for t in record["trials"])
    assert all(0.0 <= s <= 1.0 for t in record["trials"] for s in t["per_seed"])
    assert record["selected"] in [t["values"] for t in record["trials"]]
    assert len(record["routing"]) == 2 and all(len(r) == 2 for r in record["routing"])
    assert record["budget"] == {
        "epochs": {"where": 1, "plus": 1},
        "train_fraction": 0.5,
        "validation_fraction": 0.25,
    }
    write_tuning(tmp_path / "vngct.json", record)
    assert read_tuning(tmp_path / "vngct.json")["selected"] == record["selected"]


def test_tune_trains_and_scores_on_disjoint_training_items_never_the_test_split(
    aligned, stream, stream_yaml, monkeypatch, torch_one_thread
):
    folder, _ = aligned
    seen = []
    original = continual.run_stream

    def spy(adapter, features, tasks, *args, **kwargs):
        seen.append(tasks)
        return original(adapter, features, tasks, *args, **kwargs)

    monkeypatch.setattr(continual, "run_stream", spy)
    params = with_tune(grid={**PARAMS["tune"]["grid"], "seqft": {"lr_scale": [1.0]}})
    tune_method("seqft", stream_yaml, folder, params, [1000], 1)
    (tasks,) = seen
    for task, full in zip(tasks, stream.tasks, strict=True):
        fit, held = split_rows(len(full.train), 0.5, 0.25, 1000, task.name)
        for part, rows in ((task.train, fit), (task.test, held)):
            expected = full.train.take(torch.as_tensor(rows))
            assert torch.equal(part.input_ids, expected.input_ids)
            assert torch.equal(part.image, expected.image)


def test_tune_is_deterministic_and_the_random_gate_copies_vngct_rates(
    vngct_record, aligned, stream_yaml, torch_one_thread
):
    folder, _ = aligned
    with pytest.raises(ValueError, match="random_gate needs the tuning record of vngct"):
        tune_method("random_gate", stream_yaml, folder, PARAMS, SEEDS, 1)
    with pytest.raises(ValueError, match="not \\[1000\\]"):
        tune_method("random_gate", stream_yaml, folder, PARAMS, [1000], 1, vngct_record)
    random = tune_method("random_gate", stream_yaml, folder, PARAMS, SEEDS, 1, vngct_record)
    assert random["matched_routing"] == vngct_record["routing"]
    again = tune_method("random_gate", stream_yaml, folder, PARAMS, SEEDS, 1, vngct_record)
    assert again == random


def test_a_run_applies_its_selected_values(aligned, stream_yaml, tmp_path, torch_one_thread):
    folder, _ = aligned
    record = {**untuned("ewc"), "selected": {"ewc_strength": 1000.0}}
    tuned = run_method("ewc", stream_yaml, folder, 0, PARAMS, 1, tmp_path / "t", tuning=record)
    plain = run_method(
        "ewc", stream_yaml, folder, 0, PARAMS, 1, tmp_path / "p", tuning=untuned("ewc")
    )
    assert read_json(tmp_path / "t/metrics.json")["tuned"] == {"ewc_strength": 1000.0}
    assert plain["tuned"] == {}
    assert tuned["train_loss"][1] != plain["train_loss"][1]  # the penalty acts from task 2
    with pytest.raises(ValueError, match="tuning record of 'seqft' given to a run of 'ewc'"):
        run_method(
            "ewc", stream_yaml, folder, 0, PARAMS, 1, tmp_path / "x", tuning=untuned("seqft")
        )
