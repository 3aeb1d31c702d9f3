"""The ndfa tuning jobs: the validation split, one tune job at a tiny config, how a run applies
the record, and the checks of the tuning params."""

from __future__ import annotations

import numpy as np
import pytest

from reprolab.core.tuning import read_tuning, write_tuning
from reprolab.studies.ndfa.data import Split, load_task, validation_split
from reprolab.studies.ndfa.jobs import check_params, tune_method, tuned_config
from tests.conftest import study_section
from tests.studies.ndfa import tiny

TASK = {**tiny.TASK, "n_train": 120}
TRAIN = {key: value for key, value in tiny.TRAIN.items() if key != "lr"}  # lr: tuned
SURROGATE = tiny.SURROGATE
TUNE = {"validation_fraction": 0.25, "grid": {"teacher": {"ndfa": {"lr": [1e-3, 3e-3, 1e-2]}}}}


def test_validation_split_is_carved_from_training_data_only():
    # labels that name the training row they belong to, and a test part no output may touch
    split = load_task(TASK, 1000)
    ids = np.arange(len(split.X_train))
    tagged = Split(split.X_train, ids, np.full_like(split.X_test, 1e6), ids[:32], 120, (6,))
    part = validation_split(TASK, tagged, 0.25, 1000)
    assert (len(part.X_train), len(part.X_test)) == (90, 30)
    assert not set(part.y_train) & set(part.y_test)
    assert sorted([*part.y_train, *part.y_test]) == ids.tolist()
    # standardised again with the statistics of the rows left for training, nothing else
    fit = split.X_train[part.y_train].astype(np.float64)
    mean, std = fit.mean(0), fit.std(0)
    assert np.allclose(part.X_train, (fit - mean) / std, atol=1e-5)
    assert np.allclose(part.X_test, (split.X_train[part.y_test] - mean) / std, atol=1e-5)
    assert np.abs(part.X_test).max() < 100  # the test inputs (1e6) never enter
    again = validation_split(TASK, tagged, 0.25, 1000)
    assert np.array_equal(again.y_test, part.y_test)
    assert not np.array_equal(validation_split(TASK, tagged, 0.25, 1001).y_test, part.y_test)
    with pytest.raises(ValueError, match="leaves a part empty"):
        validation_split(TASK, tagged, 0.001, 1000)


def poisoned(split: Split) -> Split:
    """The same split with a test set that would change any score computed on it."""
    return Split(
        split.X_train,
        split.y_train,
        np.full_like(split.X_test, 1e6),
        np.zeros_like(split.y_test),
        split.n_classes,
        split.input_shape,
    )


def test_tune_job_scores_on_validation_and_writes_a_record(tmp_path, torch_one_thread):
    splits = {1000: load_task(TASK, 1000)}
    record = tune_method("teacher", TASK, "ndfa", TRAIN, SURROGATE, TUNE, splits, 1)
    assert record["method"] == "teacher/ndfa"
    assert record["metric"] == "validation accuracy (%)" and record["goal"] == "max"
    assert record["tuning_seeds"] == [1000]
    assert [t["values"] for t in record["trials"]] == [{"lr": v} for v in (1e-3, 3e-3, 1e-2)]
    assert all(0 <= t["score"] <= 100 for t in record["trials"])
    best = max(record["trials"], key=lambda t: t["score"])
    assert record["selected"] == best["values"]
    assert record["budget"] == {"epochs": 2, "batch_size": 32}
    # the test set is never read: poisoning it changes nothing
    again = tune_method(
        "teacher", TASK, "ndfa", TRAIN, SURROGATE, TUNE, {1000: poisoned(splits[1000])}, 1
    )
    assert again == record
    path = tmp_path / "tuning" / "teacher" / "ndfa.json"
    write_tuning(path, record)
    train, surrogate = tuned_config(read_tuning(path), "teacher", "ndfa", TRAIN, SURROGATE)
    assert train == {**TRAIN, "lr": record["selected"]["lr"]} and surrogate == SURROGATE


def test_tuned_config_applies_the_record_of_its_own_unit_only():
    record = {"method": "teacher/linfa", "selected": {"lr": 0.01, "surrogate_lr": 3e-4}}
    train, surrogate = tuned_config(record, "teacher", "linfa", TRAIN, SURROGATE)
    assert train["lr"] == 0.01 and surrogate["lr"] == 3e-4
    assert "lr" not in TRAIN and SURROGATE["lr"] == 1e-3  # inputs untouched
    with pytest.raises(ValueError, match="'teacher/linfa' given to a run of 'digits/linfa'"):
        tuned_config(record, "digits", "linfa", TRAIN, SURROGATE)


@pytest.mark.parametrize("scale", ["ci", "smoke", "paper"])
def test_params_yaml_tuning_passes_the_checks(scale):
    params = study_section("ndfa", scale)
    check_params(params)
    assert "lr" not in params["train"]  # only the tuning chooses it


@pytest.mark.parametrize(
    "grid, message",
    [
        ({"a": {"bp": {"lr": [1, 2]}, "dfa": {"lr": [1, 2]}}}, r"one entry per task \['a', 'b'\]"),
        ({"a": {"bp": {"lr": [1, 2]}}, "b": {}}, r"grid.a: no grid for method\(s\) \['dfa'\]"),
        (
            {
                "a": {"bp": {"lr": [1]}, "dfa": {"lr": [1]}},
                "b": {"bp": {"lr": [1]}, "dfa": {"lr": [1, 2]}},
            },
            "the same number of grid points",
        ),
        (
            {"a": {"bp": {"lr": [1], "momentum": [0.9]}, "dfa": {"lr": [1]}}, "b": {}},
            "a.bp.momentum: unknown axis",
        ),
        (
            {"a": {"bp": {"lr": [1], "surrogate_lr": [1]}, "dfa": {"lr": [1]}}, "b": {}},
            "no learned surrogate",
        ),
        (
            {"a": {"bp": {"lr": [1]}, "dfa": {"surrogate_lr": [1]}}, "b": {}},
            "a.dfa.surrogate_lr: dfa has no learned surrogate",
        ),
        (
            {
                "a": {"bp": {"lr": [1]}, "dfa": {"lr": [2]}},
                "b": {"bp": {"lr": [3]}, "dfa": {"lr": [4]}},
            },
            None,
        ),
    ],
)
def test_check_params_rejects_unequal_or_unknown_grids(grid, message):
    params = {"tasks": {"a": {}, "b": {}}, "methods": ["bp", "dfa"], "tune": {"grid": grid}}
    if message is None:
        check_params(params)
    else:
        with pytest.raises(ValueError, match=message):
            check_params(params)


def test_check_params_needs_the_learning_rate_axis():
    params = {
        "tasks": {"a": {}},
        "methods": ["linfa"],
        "tune": {"grid": {"a": {"linfa": {"surrogate_lr": [1e-3]}}}},
    }
    with pytest.raises(ValueError, match="grid.a.linfa: needs the axis 'lr'"):
        check_params(params)
