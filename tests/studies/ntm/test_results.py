"""The table, claims, metrics and curves of ntm from planted run files: not-applicable cells,
the best baseline chosen on the evaluation means, and each claim holding or failing as the
planted numbers say."""

from __future__ import annotations

import numpy as np
import pytest

from reprolab.core.io import write_h5, write_json
from reprolab.core.summary import results_module
from reprolab.core.tables import summarize
from reprolab.studies.ntm import results
from reprolab.studies.ntm.results import best_baseline, load_runs, run_path
from reprolab.studies.ntm.workflow_io import row_names

SEEDS = [0, 1, 2]
PARAMS = {
    "datasets": {"8gauss": {"kind": "8gauss"}, "checker": {"kind": "checker"}},
    "times": [0.05, 0.5, 1.0],
    "reference_steps": 10,
    "budget": {"steps": 10, "fm_steps": 20, "log_every": 5},
    "distillation": {"steps": 4, "log_every": 2},
    "claims": {
        "alpha": 0.05,
        "min_effect": 0.0,
        "swd_margin": 0.02,
        "mmd_margin": 0.0005,
        "exactness_tolerance": 1e-8,
    },
}
# Planted mean SWD per row key (NTM beats every baseline, SD beats NTM) and MMD alike.
SWD = {
    "reference": 0.1,
    "fm": 0.4,
    "gauss": 0.35,
    "cd": 0.3,
    "ntm": 0.2,
    "tweedie": 0.19,
    "sd": 0.18,
}


def write_runs(folder, swd=SWD, log_det_error=1e-12):
    names = row_names(PARAMS)
    for d, dataset in enumerate(PARAMS["datasets"]):
        for seed in SEEDS:
            jitter = np.random.default_rng(10 * seed + d).normal(0.0, 0.004, size=len(names))
            rows = {}
            for (key, name), noise in zip(names.items(), jitter, strict=True):
                rows[name] = {
                    "method": key,
                    "nfe": 2,
                    "swd": swd[key] + noise,
                    "mmd": swd[key] / 100 + noise / 100,
                    "modes_covered": 1.0 if dataset == "8gauss" else None,
                    "in_support": 0.9,
                }
                if key in ("gauss", "ntm"):
                    rows[name]["trajectory_nll"] = 1.0 if key == "ntm" else 1.2 + noise
            path = run_path(folder, dataset, seed)
            tuned = {"ntm": {"lr": 0.01}}
            job = {"rows": rows, "log_det_error": log_det_error, "hyperparameters": tuned}
            write_json(path, job)
            write_h5(path.with_name("curves.h5"), {"fm": np.ones(4), "sd": np.ones(2)})


def checks(folder):
    runs = load_runs(PARAMS, SEEDS, folder)
    return results.claim_checks(PARAMS, runs, SEEDS)


def test_the_module_implements_the_results_interface():
    assert results_module("ntm") is results


def test_the_table_marks_what_does_not_apply(tmp_path):
    write_runs(tmp_path)
    runs = load_runs(PARAMS, SEEDS, tmp_path)
    table = results.table(PARAMS, runs, SEEDS)
    assert ("CD-2", "checker: traj NLL") in table.not_applicable
    assert ("NTM-2", "checker: modes covered") in table.not_applicable
    assert ("NTM-2", "8gauss: traj NLL") not in table.not_applicable
    summary = summarize(table.records, table.methods, table.columns, table.not_applicable)
    swd = summary[(summary.method == "NTM-2") & (summary.column == "8gauss: SWD (x1e2)")]
    assert swd["mean"].item() == pytest.approx(20.0, abs=1.0)


def test_the_planted_advantages_hold_and_the_best_baseline_is_cd(tmp_path):
    write_runs(tmp_path)
    runs = load_runs(PARAMS, SEEDS, tmp_path)
    assert best_baseline(PARAMS, runs, "8gauss", "swd") == "CD-2"
    found = checks(tmp_path)
    assert len(found) == 12
    assert all(c["holds"] for c in found)
    assert [c["kind"] for c in found[:6]] == ["paired"] * 5 + ["sanity"]


def test_a_worse_ntm_fails_and_an_inexact_log_det_is_flagged(tmp_path):
    worse = {**SWD, "ntm": 0.5, "tweedie": 0.55, "sd": 0.6}
    write_runs(tmp_path, swd=worse, log_det_error=1e-3)
    found = checks(tmp_path)
    by_kind = [c for c in found if c["kind"] == "paired" and "NLL" not in c["statement"]]
    assert not any(c["holds"] for c in by_kind)
    assert not any(c["holds"] for c in found if c["kind"] == "sanity")


def test_metrics_and_curves(tmp_path):
    write_runs(tmp_path)
    runs = load_runs(PARAMS, SEEDS, tmp_path)
    metrics = results.study_metrics(PARAMS, runs, SEEDS)
    assert metrics["8gauss"]["best_baseline"] == {"swd": "CD-2", "mmd": "CD-2"}
    assert "trajectory_nll" not in metrics["8gauss"]["rows"]["CD-2"]
    curves = results.curve_rows(PARAMS, runs, SEEDS)
    fm = curves[curves.series == "8gauss/fm"]
    assert fm.x.tolist() == [5.0, 10.0, 15.0, 20.0]  # its 20 steps (fm_steps), every 5
    assert curves[curves.series == "checker/sd"].x.tolist() == [2.0, 4.0]
