"""bidrive's tuning and run jobs end to end at ci scale: records, every row planned and scored,
tuned rates used, byte-identical reruns, bad params refused."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from reprolab.core.io import read_h5, read_json
from reprolab.core.tuning import read_tuning
from reprolab.studies.bidrive.jobs import passes, run_job
from reprolab.studies.bidrive.tune import tune_model
from reprolab.studies.bidrive.workflow_io import TRAINED, check_params, row_names

pytestmark = pytest.mark.usefixtures("torch_one_thread")

PARAMS = {  # ci-sized; the study has no params.yaml section until it is registered
    "scenes": {
        "train": 64,
        "test": 16,
        "validation": 16,
        "mix": [0.3, 0.4, 0.3],
        "lanes": [2, 3],
        "max_curvature": 0.003,
        "curved_fraction": 0.5,
        "speed_range": [6.0, 18.0],
        "other_agent_rate": 0.4,
        "lead_middle_lane": 0.5,
    },
    "models": {
        "encoder_hidden": [16],
        "teacher": {"blocks": 2, "hidden": [16], "element": "spline"},
        "student": {"couplings": 4, "hidden": [16], "element": "spline"},
        "fm": {"hidden": [16], "steps": 4},
        "mlp": {"hidden": [16]},
    },
    "train": {"steps": 4, "batch": 16, "log_every": 2},
    "distillation": {
        "steps": 3,
        "alpha_data": 1.0,
        "alpha_forward": 1.0,
        "alpha_reverse": 1.0,
        "per_scene": 2,
        "refresh": 2,
        "reverse_samples": 1,
    },
    "selection": {"samples": 4, "temperature": 0.8},
    "latent_optimization": {
        "top": 2,
        "steps": 2,
        "lr": 0.05,
        "weights": {"likelihood": 1.0, "collision": 10.0, "drivable": 10.0, "dynamics": 1.0},
        "r_safe": 1.0,
        "beta": 5.0,
    },
    "evaluation": {"plot_scenes": 3},
    "device": "cpu",
    "tune": {
        "grid": {
            "teacher": {"lr": [0.0003, 0.001]},
            "student": {"lr": [0.0003, 0.001]},
            "fm": {"lr": [0.0003, 0.001]},
            "mlp": {"lr": [0.0003, 0.001]},
        }
    },
    "claims": {"alpha": 0.05, "min_effect": 0.0, "pdms_margin": 0.02, "min_speedup": 5.0},
}


@pytest.fixture(scope="module")
def params() -> dict:
    """A ci-sized section (bidrive is not registered yet: no params.yaml section), with
    two-point grids."""
    return copy.deepcopy(PARAMS)


@pytest.fixture(scope="module")
def tuned(params, tmp_path_factory) -> list[str]:
    folder = tmp_path_factory.mktemp("tuning")
    paths = []
    for model in TRAINED:
        tune_model(params, model, [1000], folder / f"{model}.json")
        paths.append(str(folder / f"{model}.json"))
    return paths


def test_every_planner_is_tuned_on_its_grid_by_validation_pdms(params, tuned):
    for path in tuned:
        record = read_tuning(path)
        assert [t["values"]["lr"] for t in record["trials"]] == (
            params["tune"]["grid"][record["method"]]["lr"]
        )
        assert record["goal"] == "max" and 0.0 <= record["score"] <= 1.0


def test_a_run_plans_and_scores_every_row_and_repeats_byte_for_byte(params, tuned, tmp_path):
    run_job(params, tuned, 0, tmp_path / "a", 1)
    run_job(params, tuned, 0, tmp_path / "b", 1)
    for name in ("metrics.json", "plans.h5", "curves.h5"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    metrics = read_json(tmp_path / "a" / "metrics.json")
    names = row_names(params)
    assert set(metrics["rows"]) == set(names.values())
    for key, name in names.items():
        row = metrics["rows"][name]
        assert 0.0 <= row["PDMS"] <= 1.0 and 0.0 <= row["collision_rate"] <= 1.0
        assert row["passes"] == passes(params, key)
        assert (row["expert_nll"] is None) == (key in ("const_vel", "mlp", "fm"))
    assert metrics["hyperparameters"]["teacher"] == read_tuning(tuned[0])["selected"]
    plans = read_h5(tmp_path / "a" / "plans.h5")
    shown = params["evaluation"]["plot_scenes"]
    assert plans["plans"].shape == (len(names), shown, 8, 2)
    assert plans["samples"].shape == (shown, params["selection"]["samples"], 8, 2)
    curves = read_h5(tmp_path / "a" / "curves.h5")
    assert set(curves) == {*TRAINED, "distilled"}


def test_the_teacher_needs_many_more_passes_than_the_student(params):
    assert passes(params, "teacher") == params["models"]["teacher"]["blocks"] * 16
    assert passes(params, "distilled") == params["models"]["student"]["couplings"]
    assert passes(params, "lo") > passes(params, "distilled")


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        (("scenes", "mix"), [0.5, 0.5, 0.5], "bidrive.scenes.mix"),
        (("latent_optimization", "top"), 99, "bidrive.latent_optimization.top"),
    ],
)
def test_bad_params_are_named(params, path, value, expected):
    bad = copy.deepcopy(params)
    bad[path[0]][path[1]] = value
    with pytest.raises(ValueError, match=expected):
        check_params(bad)


def test_missing_grid_is_named(params):
    bad = copy.deepcopy(params)
    del bad["tune"]["grid"]["fm"]
    with pytest.raises(ValueError, match=r"bidrive.tune.grid: no grid for \['fm'\]"):
        check_params(bad)
    assert np.isfinite(params["claims"]["pdms_margin"])
