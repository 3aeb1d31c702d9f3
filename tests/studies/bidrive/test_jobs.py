"""bidrive's tuning and run jobs end to end at ci scale: records, every row planned and scored,
tuned rates used, byte-identical reruns, bad params refused."""

from __future__ import annotations

import copy
import logging
import math

import numpy as np
import pytest
import torch

from reprolab.core.io import read_h5, read_json
from reprolab.core.tuning import read_tuning
from reprolab.models.training import Diverged, score_unless_diverged
from reprolab.studies.bidrive.jobs import build_model, passes, run_job, scene_set
from reprolab.studies.bidrive.tune import (
    distillation_scores,
    tune_distillation,
    tune_model,
    validation_pdms,
)
from reprolab.studies.bidrive.workflow_io import (
    DISTILLED,
    TRAINED,
    TUNED,
    check_params,
    row_names,
)
from tests.conftest import study_section
from tests.studies.bidrive.test_navsim import navsim_spec

pytestmark = pytest.mark.usefixtures("torch_one_thread")
LOG = logging.getLogger(__name__)


@pytest.fixture(scope="module")
def params() -> dict:
    """The ci-scale section."""
    return copy.deepcopy(study_section("bidrive", "ci"))


@pytest.fixture(scope="module")
def tuned(params, tmp_path_factory) -> list[str]:
    folder = tmp_path_factory.mktemp("tuning")
    paths = []
    for model in TRAINED:
        tune_model(params, model, [1000], folder / f"{model}.json")
        paths.append(str(folder / f"{model}.json"))
    seed_files = [folder / f"distilled_seed{seed}.json" for seed in (1000, 1001)]
    for seed, path in zip((1000, 1001), seed_files, strict=True):
        distillation_scores(params, seed, paths[:2], path)
    tune_distillation(params, seed_files, folder / f"{DISTILLED}.json")
    return [*paths, str(folder / f"{DISTILLED}.json")]


def test_every_planner_and_the_distillation_are_tuned_on_their_grids(params, tuned):
    assert [read_tuning(path)["method"] for path in tuned] == list(TUNED)
    distillation = read_tuning(tuned[-1])
    assert distillation["setting"]["student_lr"] == read_tuning(tuned[1])["selected"]["lr"]
    assert distillation["tuning_seeds"] == [1000, 1001]
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
    for path in tuned:
        record = read_tuning(path)
        assert metrics["hyperparameters"][record["method"]] == record["selected"]
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
    del bad["tune"]["grid"]["distilled"]
    with pytest.raises(ValueError, match=r"bidrive.tune.grid: no grid for \['fm', 'distilled'\]"):
        check_params(bad)
    assert np.isfinite(params["claims"]["pdms_margin"])


def test_navsim_scenes_are_the_same_for_every_seed(params, tmp_path):
    navsim = copy.deepcopy(params)
    navsim["scenes"].update(source="navsim", navsim=navsim_spec(tmp_path))
    first, other = scene_set(navsim, 0, "train"), scene_set(navsim, 1, "train")
    assert len(first) == 11
    np.testing.assert_array_equal(first.ctx, other.ctx)
    assert len(scene_set(navsim, 0, "validation")) == 5


def test_distillation_scores_of_another_grid_are_refused(params, tuned, tmp_path):
    other = copy.deepcopy(params)
    other["tune"]["grid"]["distilled"]["lr"] = [0.5, 0.6]
    seed_file = tmp_path / "seed1000.json"
    distillation_scores(params, 1000, tuned[:2], seed_file)
    with pytest.raises(ValueError, match=r"seed1000.json: scores for the rates .* \[0.5, 0.6\]"):
        tune_distillation(other, [str(seed_file)], tmp_path / "distilled.json")


def test_a_planner_with_non_finite_plans_is_a_diverged_grid_point(params):
    validation = scene_set(params, 1000, "validation")
    mlp = build_model(params, "mlp").fit_standardisation(validation.ctx, validation.expert)
    with torch.no_grad():
        mlp.head[-1].bias[3] = math.inf
    with pytest.raises(Diverged, match=f"mlp: {len(validation)} of {len(validation)} validation"):
        validation_pdms(params, "mlp", mlp.eval(), 1000, validation)
    assert math.isnan(
        score_unless_diverged(lambda: validation_pdms(params, "mlp", mlp, 1000, validation), LOG)
    )
