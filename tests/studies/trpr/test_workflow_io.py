"""What the trpr rules check before any job starts: rows, claims, grids and benchmarks."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from reprolab.core.params import load_yaml, study_params
from reprolab.studies.trpr.workflow_io import check_params, rate_source, tuned_rows
from tests.conftest import ROOT


def section(scale: str = "smoke") -> dict[str, Any]:
    return study_params({**load_yaml(ROOT / "params.yaml"), "scale": scale}, "trpr")


@pytest.mark.parametrize("scale", ["smoke", "ci", "paper"])
def test_the_committed_params_pass_at_every_scale(scale):
    check_params(section(scale))


def test_every_trained_row_is_tuned_and_the_projecting_and_penalised_ones_borrow_moes_rate():
    params = section()
    assert tuned_rows(params) == [row for row in params["rows"] if row != "ncm"]
    assert [row for row in params["rows"] if rate_source(row)] == [
        "router_kl",
        "lwf",
        "ewc",
        "trpr_card",
        "trpr_inference",
    ]
    assert rate_source("moe") is None and rate_source("ncm") is None


def changed(path: str, value: Any) -> dict[str, Any]:
    params = copy.deepcopy(section())
    *keys, last = path.split(".")
    target = params
    for key in keys:
        target = target[key]
    if value is None:
        del target[last]
    else:
        target[last] = value
    return params


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        ("rows", ["moe", "trpr_card", "trpr_inference", "l2p"], r"trpr.rows: unknown row\(s\)"),
        ("rows", ["moe", "trpr_card"], r"must include \['trpr_inference'\]"),
        ("claims.baselines", ["moe", "trpr_card"], r"trpr.claims.baselines: \['trpr_card'\]"),
        ("claims.drift_row", "ncm", r"trpr.claims.drift_row: 'ncm' must be a row .* router"),
        ("tune.grid.moe", {"delta": [0.1, 0.2, 0.3, 0.4]}, r"tune.grid.moe: .* tunes 'lr' alone"),
        ("tune.grid.lwf", {"penalty_weight": [1.0]}, r"the same number of grid points"),
        ("benchmarks.digitstyles.root", "data/raw/x", r"digitstyles is generated \(no root\)"),
    ],
)
def test_params_the_study_cannot_run_are_refused_naming_the_key(path, value, message):
    with pytest.raises(ValueError, match=message):
        check_params(changed(path, value))


def test_rows_that_borrow_a_rate_need_the_row_that_tunes_it():
    params = changed("rows", ["ncm", "lwf", "trpr_card", "trpr_inference"])
    params["claims"]["baselines"] = ["ncm", "lwf"]
    params["claims"]["drift_row"] = "lwf"
    with pytest.raises(ValueError, match=r"train at the learning rate tuned for 'moe': include it"):
        check_params(params)


def test_pretraining_needs_digitstyles_unless_a_checkpoint_is_named():
    params = changed(
        "benchmarks", {"cub": {"tasks": 10, "root": "data/raw/cub", "image_size": 224}}
    )
    with pytest.raises(ValueError, match=r"trpr.backbone.checkpoint: null pre-trains"):
        check_params(params)
    params["backbone"]["checkpoint"] = "models/vit"
    check_params(params)
