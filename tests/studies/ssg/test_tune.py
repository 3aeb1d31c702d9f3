"""The ssg tuning jobs: the validation split, one tune job at a tiny config, how a run applies the
records, and the checks of the tuning params."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest

from reprolab.core.params import ParamsError, check_section
from reprolab.core.tuning import grid_points, read_tuning, selected, write_tuning
from reprolab.studies.ssg import jobs, models
from reprolab.studies.ssg import train as train_module
from reprolab.studies.ssg.data import Bags, make_dataset
from reprolab.studies.ssg.storage import read_run_metrics
from reprolab.studies.ssg.train import RunResult, train_run
from reprolab.studies.ssg.tune import (
    GROUNDING,
    METRIC,
    apply_values,
    check_params,
    tune_method,
    tuned_params,
    validation_split,
)
from tests.conftest import study_section
from tests.studies.ssg.specs import MODEL
from tests.studies.ssg.specs import SYNTHMIL as SPEC

TRAIN = {"epochs": 2, "batch_size": 8, "weight_decay": 0.0, "device": "cpu"}
TUNE = {
    "dataset": "tiny",
    "validation_fraction": 0.25,
    "grid": {"ssg_uot": {"lr": [1e-3, 1e-2], "lambda": [0.1, 1.0]}, "abmil": {"lr": [1e-2]}},
}


@pytest.fixture(scope="module")
def bags() -> tuple[Bags, Bags]:
    return make_dataset(SPEC, 1000)


def tagged(bags: Bags) -> Bags:
    """The same bags with instance labels that name the bag's index (to follow bags around)."""
    labels = [np.full(len(x), i) for i, x in enumerate(bags.X)]
    return Bags(bags.X, bags.y, labels)


def test_validation_split_is_stratified_and_carved_from_the_given_bags_only(bags):
    train = tagged(bags[0])
    fit, val = validation_split(train, 0.25, 1000)
    assert (len(fit), len(val)) == (18, 6)  # 12 bags per label, 3 of each held out
    assert np.bincount(fit.y).tolist() == [9, 9] and np.bincount(val.y).tolist() == [3, 3]
    ids = lambda part: [int(lab[0]) for lab in part.instance_labels]  # noqa: E731
    assert not set(ids(fit)) & set(ids(val))
    assert sorted(ids(fit) + ids(val)) == list(range(len(train)))
    assert ids(fit) == sorted(ids(fit)) and ids(val) == sorted(ids(val))  # order kept
    assert all(np.array_equal(train.X[i], x) for i, x in zip(ids(val), val.X, strict=True))
    assert ids(validation_split(train, 0.25, 1000)[1]) == ids(val)
    assert ids(validation_split(train, 0.25, 1001)[1]) != ids(val)
    with pytest.raises(ValueError, match="leaves a part without that label"):
        validation_split(train, 0.01, 1000)


def test_tune_job_scores_on_validation_and_writes_a_record(bags, tmp_path, torch_one_thread):
    record = tune_method("ssg_uot", MODEL, TRAIN, TUNE, {1000: bags[0]}, 1)
    assert record["method"] == "ssg_uot" and record["metric"] == METRIC
    assert record["goal"] == "max" and record["tuning_seeds"] == [1000]
    grid = [{"lr": lr, "lambda": lam} for lr in (1e-3, 1e-2) for lam in (0.1, 1.0)]
    assert [t["values"] for t in record["trials"]] == grid
    assert all(0.0 <= t["score"] <= 1.0 for t in record["trials"])
    best = max(record["trials"], key=lambda t: t["score"])
    assert record["selected"] == best["values"] and record["score"] == best["score"]
    assert record["dataset"] == "tiny" and record["validation_fraction"] == 0.25
    assert record["budget"] == {"epochs": 2, "batch_size": 8}
    assert record["bags"] == {"fit": 18, "validation": 6}
    # a trial's score is the validation bag AUC of that run, trained on the rest
    fit, val = validation_split(bags[0], 0.25, 1000)
    model, train = apply_values(MODEL, TRAIN, grid[-1])
    run = train_run(fit, val, "ssg_uot", model, train, 1000, 1)
    assert record["trials"][-1]["per_seed"] == [run.metrics["bag_auc"]]
    path = tmp_path / "tuning" / "ssg_uot.json"
    write_tuning(path, record)
    assert read_tuning(path)["selected"] == record["selected"]


def test_tune_job_never_reads_the_test_bags(bags, monkeypatch, torch_one_thread):
    spec = {**SPEC, "generator": "synthmil"}
    params = {"model": MODEL, "train": TRAIN, "tune": {**TUNE, "grid": {"abmil": {"lr": [1e-2]}}}}
    clean = jobs.tune_dataset(spec, {}, "abmil", params, [1000], 1)
    poison = Bags(
        [np.full_like(x, 1e6) for x in bags[1].X],
        1 - bags[1].y,
        [np.zeros_like(lab) for lab in bags[1].instance_labels],
    )
    monkeypatch.setattr(jobs, "load_dataset", lambda *_: (bags[0], poison))
    assert jobs.tune_dataset(spec, {}, "abmil", params, [1000], 1) == clean


def test_a_diverged_grid_point_is_never_selected(bags, monkeypatch):
    def fake_run(fit, val, method, model, train, seed, threads):
        loss = math.nan if train["lr"] == 1.0 else 0.5
        auc = 0.99 if train["lr"] == 1.0 else train["lr"]
        return RunResult({"bag_auc": auc, "final_loss": loss}, {}, 0.0)

    monkeypatch.setattr(train_module, "train_run", fake_run)
    tuning = {**TUNE, "grid": {"abmil": {"lr": [0.1, 0.2, 1.0]}}}
    record = tune_method("abmil", MODEL, TRAIN, tuning, {1000: bags[0]}, 1)
    assert math.isnan(record["trials"][-1]["score"])
    assert record["selected"] == {"lr": 0.2} and record["on_edge"] == []


def test_runs_apply_each_methods_record(bags, tmp_path, torch_one_thread):
    records = {
        "abmil": {"lr": 0.01, "weight_decay": 0.001},
        "ssg_uot": {"lr": 0.003, "lambda": 0.1},
    }
    paths = []
    for method, values in records.items():
        paths.append(tmp_path / "tuning" / f"{method}.json")
        write_tuning(
            paths[-1], {"format": "reprolab.tuning/1", "method": method, "selected": values}
        )
    settings = tuned_params(MODEL, TRAIN, selected(paths), ["abmil", "ssg_uot"])
    assert settings["abmil"][1] == {**TRAIN, "lr": 0.01, "weight_decay": 0.001}
    assert settings["ssg_uot"][1] == {**TRAIN, "lr": 0.003}
    assert settings["ssg_uot"][0]["grounding"]["lambda"] == 0.1
    assert settings["abmil"][0] == MODEL and "lr" not in TRAIN  # inputs untouched
    jobs.train_dataset(bags, "tiny", ["abmil", "ssg_uot"], settings, 0, 1, tmp_path / "runs")
    for method in records:
        expected = train_run(*bags, method, *settings[method], 0, 1).metrics
        got = read_run_metrics(tmp_path / "runs" / "tiny" / method / "seed0" / "metrics.json")
        assert got == pytest.approx(expected, rel=1e-9, nan_ok=True)
    with pytest.raises(ValueError, match=r"no tuning record for method\(s\) \['transmil'\]"):
        tuned_params(MODEL, TRAIN, selected(paths), ["abmil", "transmil"])


def test_apply_values_sets_nested_keys_on_copies():
    model, train = apply_values(MODEL, TRAIN, {"lambda": 0.03, "lr": 0.1})
    assert model["grounding"]["lambda"] == 0.03 and MODEL["grounding"]["lambda"] == 1.0
    assert train == {**TRAIN, "lr": 0.1}
    with pytest.raises(ValueError, match="unknown tuning axis 'dropout'"):
        apply_values(MODEL, TRAIN, {"dropout": 0.1})


def test_grounding_methods_match_the_models():
    assert GROUNDING == models.GROUNDING


@pytest.mark.parametrize("scale", ["ci", "smoke", "paper"])
def test_params_yaml_tuning_passes_the_checks(scale):
    params = study_section("ssg", scale)
    check_params(params)
    assert "lr" not in params["train"] and "lambda" not in params["model"]["grounding"]
    sizes = {len(grid_points(params["tune"]["grid"][m])) for m in params["methods"]}
    assert len(sizes) == 1


@pytest.mark.parametrize(
    "key, value",
    [(("train", "lr"), 1e-3), (("model", "grounding", "lambda"), 0.3)],
)
def test_schema_rejects_values_only_the_tuning_sets(key, value):
    params = copy.deepcopy(study_section("ssg", "ci"))
    params.pop("scales", None)
    target = params
    for part in key[:-1]:
        target = target[part]
    target[key[-1]] = value
    with pytest.raises(ParamsError, match=".".join(key)):
        check_section(params, "ssg")


def base_params() -> dict:
    return {
        "methods": ["abmil", "ssg_uot"],
        "datasets": {"a": {}, "b": {}},
        "sweep": {"methods": ["abmil", "ssg_uot"]},
        "tune": {
            "dataset": "a",
            "grid": {
                "abmil": {"lr": [1, 2], "weight_decay": [0, 1]},
                "ssg_uot": {"lr": [1, 2], "lambda": [0.1, 1]},
            },
        },
    }


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda p: None, None),
        (lambda p: p["tune"].update(dataset="c"), "tune.dataset: 'c' is not one of"),
        (lambda p: p["tune"]["grid"].pop("abmil"), r"no grid for method\(s\) \['abmil'\]"),
        (lambda p: p["tune"]["grid"]["abmil"].update(lr=[1]), "the same number of grid points"),
        (
            lambda p: p["tune"]["grid"]["abmil"].update(momentum=[1]),
            "grid.abmil.momentum: unknown axis",
        ),
        (
            lambda p: p["tune"]["grid"].update(abmil={"lr": [1, 2], "lambda": [0, 1]}),
            "grid.abmil.lambda: abmil has no grounding",
        ),
        (
            lambda p: p["tune"]["grid"].update(ssg_uot={"lr": [1, 2], "weight_decay": [0, 1]}),
            "grid.ssg_uot: needs the axis 'lambda'",
        ),
        (
            lambda p: p["tune"]["grid"].update(abmil={"weight_decay": [0, 1, 2, 3]}),
            "grid.abmil: needs the axis 'lr'",
        ),
        (
            lambda p: p["sweep"].update(methods=["ssg_uot", "transmil"]),
            r"sweep.methods: \['transmil'\] not in ssg.methods",
        ),
    ],
)
def test_check_params_rejects_what_the_schema_cannot(change, message):
    params = base_params()
    change(params)
    if message is None:
        check_params(params)
    else:
        with pytest.raises(ValueError, match=message):
            check_params(params)
