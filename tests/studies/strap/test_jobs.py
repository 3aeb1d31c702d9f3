"""The strap jobs: params checks, learning rates, sensitivity on a tiny backbone and one
placement (and one task) trained end to end on random clips."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from reprolab.studies.strap.adapters import placement
from reprolab.studies.strap.backbone import blocks
from reprolab.studies.strap.data import ClipSet
from reprolab.studies.strap.jobs import (
    learning_rate,
    measure_sensitivity,
    random_copy,
    run_placement,
    run_task,
    sensitivity_clips,
    settings,
)
from reprolab.studies.strap.workflow_io import TUNED, check_params, tuned_rows
from tests.conftest import study_section

from .conftest import BOTTLENECK, PARAMS, TOKENS, WIDTH, params, random_uint8_clips

pytestmark = pytest.mark.usefixtures("torch_one_thread")

LAYERS = 3
FRAMES = 3
CHOSEN = {row: {"lr": 0.01} for row in TUNED}


@pytest.fixture(scope="module")
def task() -> dict[str, ClipSet]:
    """4 train and 4 test random uint8 clips of 2 classes."""
    return {
        "train": ClipSet(random_uint8_clips(4, FRAMES, seed=0), np.array([0, 1, 0, 1])),
        "test": ClipSet(random_uint8_clips(4, FRAMES, seed=1), np.array([1, 0, 1, 0])),
    }


def _weights(model) -> dict[str, torch.Tensor]:
    return {k: v.clone() for k, v in model.state_dict().items()}


# params checks


def test_check_params_accepts_the_test_section():
    check_params(PARAMS)


@pytest.mark.parametrize("scale", ["ci", "paper"])
def test_check_params_accepts_params_yaml(scale):
    check_params(study_section("strap", scale))


def test_check_params_rejects_an_unknown_row():
    with pytest.raises(ValueError, match=r"strap\.rows: unknown row\(s\) \['oracle_b'\]"):
        check_params(params(rows=[*PARAMS["rows"], "oracle_b"]))
    with pytest.raises(ValueError, match=r"strap\.coarse_rows: unknown row\(s\) \['vivit'\]"):
        check_params(params(coarse_rows=[*PARAMS["coarse_rows"], "vivit"]))


@pytest.mark.parametrize("key", ["rows", "coarse_rows"])
def test_check_params_rejects_a_task_without_strap(key):
    rows = [row for row in PARAMS[key] if row != "strap"]
    with pytest.raises(ValueError, match=rf"strap\.{key}: must include 'strap'"):
        check_params(params(**{key: rows}))


def test_check_params_rejects_unequal_grids():
    tune = copy.deepcopy(PARAMS["tune"])
    tune["grid"]["aim"] = {"lr": [0.001, 0.003, 0.01]}
    with pytest.raises(ValueError, match=r"strap\.tune\.grid: every method needs the same"):
        check_params(params(tune=tune))


def test_check_params_rejects_a_tuned_row_without_a_grid():
    tune = copy.deepcopy(PARAMS["tune"])
    del tune["grid"]["probe"]
    with pytest.raises(ValueError, match=r"strap\.tune\.grid: no grid for method\(s\) \['probe'\]"):
        check_params(params(tune=tune))
    # without the probe row, no probe grid is needed
    check_params(params(tune=tune, rows=[r for r in PARAMS["rows"] if r != "probe"]))


def test_check_params_rejects_a_uniform_rival_that_did_not_run():
    coarse = ["temporal_all", "st_adapter", "strap"]
    with pytest.raises(ValueError, match=r"strap\.claims\.uniform: \['aim'\] not in strap\.coarse"):
        check_params(params(coarse_rows=coarse))
    rows = [r for r in PARAMS["rows"] if r != "aim"]
    with pytest.raises(ValueError, match=r"claims\.uniform: \['aim'\] not in strap\.rows"):
        check_params(params(rows=rows))


def test_check_params_rejects_a_parameter_baseline_that_did_not_run():
    claims = {**PARAMS["claims"], "uniform": ["temporal_all", "st_adapter"]}
    rows = [r for r in PARAMS["rows"] if r != "aim"]
    with pytest.raises(ValueError, match=r"parameter_baselines: \['aim'\] not in strap\.rows"):
        check_params(params(rows=rows, claims=claims))


def test_tuned_rows():
    assert tuned_rows(PARAMS) == list(TUNED)
    assert tuned_rows(params(rows=["strap_reversed", "strap", "probe"], coarse_rows=["aim"])) == [
        "probe",
        "aim",
        "strap",
    ]


def test_learning_rate():
    chosen = {"strap": {"lr": 0.03}, "aim": {"lr": 0.001}}
    assert learning_rate("strap", chosen) == 0.03
    assert learning_rate("strap_reversed", chosen) == 0.03  # STRAP's record
    assert learning_rate("aim", chosen) == 0.001
    with pytest.raises(ValueError, match=r"no tuning record for 'probe' \(have \['aim', 'strap'\]"):
        learning_rate("probe", chosen)
    with pytest.raises(ValueError, match="no tuning record for 'strap'"):
        learning_rate("strap_reversed", {"aim": {"lr": 0.001}})


def test_placement_errors_on_the_backbones_depth(vit):
    layers = len(blocks(vit))
    with pytest.raises(ValueError, match="unknown row 'oracle'"):
        placement("oracle", layers)
    for bad in (-1, layers + 1):
        with pytest.raises(ValueError, match=rf"boundary must be in \[0, {layers}\], got {bad}"):
            placement("strap", layers, bad)
    with pytest.raises(ValueError, match="got None"):
        placement("strap_reversed", layers)


def test_settings_merge_train_adapters_and_pixel_statistics():
    config = settings(PARAMS)
    assert config["bottleneck"] == BOTTLENECK and config["pool"] == "tokens"
    assert config["mean"] == PARAMS["backbone"]["mean"]
    assert config["std"] == PARAMS["backbone"]["std"]
    assert config["epochs"] == PARAMS["train"]["epochs"]


# sensitivity on the tiny backbone


def test_sensitivity_clips_are_drawn_from_the_seed(task):
    config = settings(PARAMS)
    sample = sensitivity_clips(task["train"], 3, seed=5, config=config)
    assert sample.shape == (3, FRAMES, 3, 16, 16) and sample.dtype == torch.float32
    torch.testing.assert_close(sample, sensitivity_clips(task["train"], 3, 5, config))
    everything = sensitivity_clips(task["train"], 100, seed=5, config=config)
    assert everything.shape[0] == 4  # at most the training clips


def test_random_copy_has_the_architecture_not_the_weights(vit):
    before = _weights(vit)
    copy_ = random_copy(vit, seed=3)
    assert type(copy_) is type(vit) and len(blocks(copy_)) == len(blocks(vit))
    assert not copy_.training
    shared = [k for k in before if k in copy_.state_dict()]
    assert len(shared) == len(before)
    assert any(not torch.equal(before[k], copy_.state_dict()[k]) for k in shared)
    again = random_copy(vit, seed=3)
    assert all(torch.equal(copy_.state_dict()[k], again.state_dict()[k]) for k in shared)
    assert all(torch.equal(before[k], vit.state_dict()[k]) for k in before)


def test_measure_sensitivity(vit, task):
    result = measure_sensitivity(vit, task["train"], PARAMS, seed=0)
    assert set(result) == {"ts", "cka", "random_ts", "boundary"}
    for key in ("ts", "cka", "random_ts"):
        assert len(result[key]) == LAYERS and all(np.isfinite(result[key]))
    assert all(v > 0 for v in result["ts"])
    bounds = result["boundary"]
    assert set(bounds) == {"segment", "threshold", "cka", "random"}
    for rule in ("segment", "cka", "random"):
        assert 1 <= bounds[rule] <= LAYERS - 1
    assert 0 <= bounds["threshold"] <= LAYERS
    assert measure_sensitivity(vit, task["train"], PARAMS, seed=0) == result
    assert all(len(layer._forward_hooks) == 0 for layer in blocks(vit))


# training end to end


RESULT_KEYS = {
    "accuracy",
    "parameters",
    "adapter_parameters",
    "closed_form_parameters",
    "flops",
    "final_loss",
    "lr",
    "placement",
}


@pytest.mark.parametrize(("row", "boundary"), [("strap", 1), ("st_adapter", None)])
def test_run_placement_end_to_end(vit, task, row, boundary):
    before = _weights(vit)
    plan = placement(row, LAYERS, boundary)
    first = run_placement(vit, task, plan, 0.01, PARAMS, seed=0, label="test")
    assert set(first) == RESULT_KEYS
    assert first["closed_form_parameters"] == first["adapter_parameters"] > 0
    head = TOKENS * WIDTH * 2 + 2  # tokens pool, 2 classes
    assert first["parameters"] == first["adapter_parameters"] + head
    assert first["accuracy"] in {0.0, 25.0, 50.0, 75.0, 100.0}
    assert first["flops"] > 0 and np.isfinite(first["final_loss"])
    assert first["placement"] == plan and first["lr"] == 0.01
    assert all(len(layer._forward_hooks) == 0 for layer in blocks(vit))
    assert all(torch.equal(before[k], v) for k, v in vit.state_dict().items())  # frozen
    again = run_placement(vit, task, plan, 0.01, PARAMS, seed=0, label="test")
    assert again == first


def test_run_placement_flops_grow_with_adapters(vit, task):
    probe = run_placement(vit, task, placement("probe", LAYERS), 0.01, PARAMS, 0, "probe")
    aim = run_placement(vit, task, placement("aim", LAYERS), 0.01, PARAMS, 0, "aim")
    assert probe["adapter_parameters"] == probe["closed_form_parameters"] == 0
    assert aim["flops"] > probe["flops"]


def test_run_task_rows_and_sweep(vit, task):
    rows = ["probe", "spatial_all", "temporal_all", "strap", "strap_reversed"]
    result = run_task("fine", vit, task, rows, CHOSEN, PARAMS, seed=0, sweep=True)
    b_star = result["sensitivity"]["boundary"]["segment"]
    assert list(result["rows"]) == rows
    assert result["rows"]["strap"]["boundary"] == b_star
    assert result["rows"]["strap"]["placement"] == placement("strap", LAYERS, b_star)
    assert result["rows"]["strap_reversed"]["placement"] == placement(
        "strap_reversed", LAYERS, b_star
    )
    assert result["rows"]["probe"]["boundary"] is None
    assert list(result["sweep"]) == [str(b) for b in range(LAYERS + 1)]
    assert result["sweep"]["0"]["placement"] == placement("temporal_all", LAYERS)
    assert result["sweep"][str(LAYERS)]["placement"] == placement("spatial_all", LAYERS)
    same = {k: v for k, v in result["sweep"][str(b_star)].items() if k != "boundary"}
    assert same == {k: v for k, v in result["rows"]["strap"].items() if k != "boundary"}
    for b in range(1, LAYERS):
        assert result["sweep"][str(b)]["placement"] == placement("strap", LAYERS, b)
    coarse = run_task("coarse", vit, task, ["strap"], CHOSEN, PARAMS, seed=0, sweep=False)
    assert "sweep" not in coarse and list(coarse["rows"]) == ["strap"]


@pytest.mark.parametrize("end", ["temporal_all", "spatial_all"])
def test_check_params_requires_the_sweeps_ends(end):
    """The b-sweep's ends are the temporal-all and spatial-all rows with their own tuned
    rates: rows without one would fail midway through a run, so they are refused up front."""
    rows = [r for r in PARAMS["rows"] if r != end]
    with pytest.raises(ValueError, match=rf"strap\.rows: must include '{end}'"):
        check_params(params(rows=rows))
