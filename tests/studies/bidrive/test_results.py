"""The table, claims, metrics and curves of bidrive from planted run files: each claim holding
or failing as the planted numbers say, and the flows-only NLL column."""

from __future__ import annotations

import numpy as np

from reprolab.core.io import write_h5, write_json
from reprolab.core.summary import results_module
from reprolab.studies.bidrive import results
from reprolab.studies.bidrive.results import load_runs, run_path
from reprolab.studies.bidrive.workflow_io import ROWS, TRAINED, row_names

SEEDS = [0, 1, 2]
PARAMS = {
    "models": {"fm": {"steps": 20}},
    "train": {"steps": 10, "log_every": 5},
    "distillation": {"steps": 4},
    "claims": {"alpha": 0.05, "min_effect": 0.0, "pdms_margin": 0.02, "min_speedup": 5.0},
}
# Planted mean PDMS and collision rate per row key.
PDMS = {
    "const_vel": 0.5,
    "mlp": 0.55,
    "fm": 0.7,
    "teacher": 0.8,
    "student": 0.75,
    "distilled_heuristic": 0.7,
    "distilled": 0.8,
    "lo": 0.86,
}
PASSES = {"teacher": 64, "student": 8, "distilled": 8, "distilled_heuristic": 8, "lo": 168}


def write_runs(folder, pdms=PDMS, lo_collisions=0.05):
    names = row_names(PARAMS)
    for seed in SEEDS:
        jitter = np.random.default_rng(seed).normal(0.0, 0.003, size=len(names))
        rows = {}
        for (key, name), noise in zip(names.items(), jitter, strict=True):
            flow = key in ("teacher", "student", "distilled", "distilled_heuristic", "lo")
            rows[name] = {
                **{sub: 0.9 for sub in ("NC", "DAC", "TTC", "EP", "C")},
                "PDMS": pdms[key] + noise,
                "collision_rate": (lo_collisions if key == "lo" else 0.1) + noise / 10,
                "ade": 1.0,
                "min_ade": 0.5,
                "expert_nll": 10.0 if flow else None,
                "passes": PASSES.get(key, 1),
                "pdms_by_kind": {"free": 0.9, "lead": None, "cut_in": 0.7},
            }
        path = run_path(folder, seed)
        write_json(
            path,
            {"rows": rows, "hyperparameters": {"teacher": {"lr": 0.001}}, "scene_kinds": {}},
        )
        curves = {m: np.ones(2) for m in TRAINED}
        curves["distilled"] = np.ones(1)
        write_h5(path.with_name("curves.h5"), curves)


def checks(folder):
    runs = load_runs(PARAMS, SEEDS, folder)
    return results.claim_checks(PARAMS, runs, SEEDS)


def test_the_module_implements_the_results_interface():
    assert results_module("bidrive") is results


def test_the_planted_advantages_hold(tmp_path):
    write_runs(tmp_path)
    found = checks(tmp_path)
    assert [c["kind"] for c in found] == ["paired", "sanity", "paired", "paired", "paired"]
    assert all(c["holds"] for c in found)
    assert found[1]["details"]["ratio"] == 8.0


def test_a_weaker_student_and_a_colliding_lo_fail(tmp_path):
    write_runs(tmp_path, pdms={**PDMS, "distilled": 0.7, "lo": 0.6}, lo_collisions=0.3)
    found = checks(tmp_path)
    assert [c["holds"] for c in found] == [False, True, False, False, False]


def test_table_metrics_and_curves(tmp_path):
    write_runs(tmp_path)
    runs = load_runs(PARAMS, SEEDS, tmp_path)
    table = results.table(PARAMS, runs, SEEDS)
    assert table.methods == [name.format(fm_steps=20) for name in ROWS.values()]
    assert ("MLP-L2", "expert NLL") in table.not_applicable
    assert ("BiDrive+LO", "expert NLL") not in table.not_applicable
    metrics = results.study_metrics(PARAMS, runs, SEEDS)
    assert metrics["rows"]["BiDrive+LO"]["pdms_by_kind"]["free"]["mean"] == 0.9
    curves = results.curve_rows(PARAMS, runs, SEEDS)
    assert curves[curves.series == "teacher"].x.tolist() == [5.0, 10.0]
    assert curves[curves.series == "distilled"].x.tolist() == [4.0]
