"""normlift's jobs end to end at ci scale: scene file, tuning, run; byte-identical reruns."""

from __future__ import annotations

import copy
import hashlib
import json

import numpy as np
import pytest

from reprolab.core.io import read_json
from reprolab.studies.normlift.jobs import run_job, write_scene_file
from reprolab.studies.normlift.tune import tune_method
from reprolab.studies.normlift.workflow_io import TUNED, check_params
from tests.conftest import study_section


@pytest.fixture(scope="module")
def params() -> dict:
    return copy.deepcopy(study_section("normlift", "ci"))


@pytest.fixture(scope="module")
def done(tmp_path_factory, params) -> dict:
    """A tuning scene, an evaluation scene, every tuning record and one run."""
    root = tmp_path_factory.mktemp("normlift")
    write_scene_file(params["data"], 1000, root / "tune.h5", None, 1)
    write_scene_file(params["data"], 0, root / "eval.h5", None, 1)
    records = []
    for method in TUNED:
        path = root / f"{method}.json"
        tune_method(params, method, [1000], [root / "tune.h5"], path, 1)
        records.append(path)
    out = run_job(params, 0, root / "eval.h5", records, root / "run", 1)
    return {"root": root, "records": records, "metrics": out}


def test_every_row_is_scored_and_the_tuned_values_are_applied(done, params):
    metrics = done["metrics"]
    assert list(metrics["methods"]) == params["methods"]
    for method in TUNED:
        record = read_json(done["root"] / f"{method}.json")
        assert metrics["tuned"][method] == record["selected"]
        assert len(record["trials"]) == 2  # the ci grids: two points each
    for scores in metrics["methods"].values():
        assert 0.0 <= scores["miou_3d"] <= 1.0 and 0.0 <= scores["miou_2d"] <= 1.0
    assert metrics["sanity"]["decomposition_max_error"] < 1e-12
    assert metrics["sanity"]["closed_form_min_cosine"] > 0.9999


def test_the_weighted_average_and_the_closed_form_share_labels(done):
    import h5py

    with h5py.File(done["root"] / "run" / "lifted.h5") as handle:
        wavg = handle["labels/wavg"][()]
        correct = handle["correct"][()]
        truth = handle["truth"][()]
    assert np.array_equal(wavg == truth, correct)


def test_costs_order_the_rows(done):
    work = {m: s["work"] for m, s in done["metrics"]["methods"].items()}
    assert work["wavg"] == work["maxw"] < work["normlift"]
    assert work["distill"] == 2 * 5 * work["wavg"]  # 5 steps at ci, two products a step


def test_a_rerun_writes_the_same_bytes(done, params, tmp_path):
    run_job(params, 0, done["root"] / "eval.h5", done["records"], tmp_path, 1)
    for name in ("metrics.json", "lifted.h5"):
        first = hashlib.md5((done["root"] / "run" / name).read_bytes()).hexdigest()
        assert hashlib.md5((tmp_path / name).read_bytes()).hexdigest() == first


def test_a_run_without_a_tuning_record_stops(done, params, tmp_path):
    with pytest.raises(ValueError, match="no tuning record"):
        run_job(params, 0, done["root"] / "eval.h5", done["records"][:-1], tmp_path, 1)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda p: p["methods"].remove("normlift"), "list normlift"),
        (lambda p: p["tune"]["grid"]["wavg_knn"].update(k=[4, 8, 16]), "same number"),
        (lambda p: p["wavg_knn"].update(k=4), "also on tune.grid"),
        (lambda p: p["normlift"].pop("tau_c"), "no value for"),
        (lambda p: p["data"]["features"].update(patch_grid=5), "does not divide"),
    ],
)
def test_bad_params_are_refused_with_the_key(params, change, message):
    bad = json.loads(json.dumps(params))
    change(bad)
    with pytest.raises(ValueError, match=message):
        check_params(bad)
