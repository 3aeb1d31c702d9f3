"""Table, claims, metrics.json and curves.csv from per-run files; the run plan and sweep names."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from reprolab.core.io import read_json, write_h5, write_json
from reprolab.core.schemas import validate_claims
from reprolab.core.summary import summarize_study
from reprolab.studies.ssg.results import load_runs
from reprolab.studies.ssg.workflow_io import datasets, run_plan

METHODS = ["abmil", "max_pool", "ssg_uot"]
SEEDS = [0, 1, 2]


def params() -> dict:
    return {
        "methods": METHODS,
        "datasets": {
            "sparse_hetero": {"witness_rate": 0.03, "heterogeneity": 1.0},
            "dense_hetero": {"witness_rate": 0.2, "heterogeneity": 1.0},
        },
        "sweep": {
            "base": "sparse_hetero",
            "methods": ["abmil", "ssg_uot"],
            "witness_rate": [0.03, 0.2],
            "heterogeneity": [0.0, 1.0],
        },
        "claims": {
            "alpha": 0.05,
            "min_effect": 0.01,
            "sparse_heterogeneous": "sparse_hetero",
            "compare_regimes": ["dense_hetero"],
        },
        "table_digits": 2,
    }


def write_runs(root: Path, values: dict) -> None:
    """metrics.json and a two-epoch curves.h5 (last epoch = the final bag AUC) per run."""
    for (dataset, method), (bag, inst) in values.items():
        for seed in SEEDS:
            run = root / dataset / method / f"seed{seed}"
            write_h5(
                run / "curves.h5",
                {
                    "epoch": np.array([1, 2]),
                    "train_loss": np.ones(2),
                    "bag_auc": np.array([0.5, bag[seed]]),
                    "instance_auc": np.array([0.5, inst[seed]]),
                },
            )
            metrics = {"bag_auc": bag[seed], "bag_accuracy": 0.5, "instance_auc": inst[seed]}
            write_json(run / "metrics.json", metrics)


def values() -> dict:
    good, flat = [0.9, 0.92, 0.91], [0.7, 0.71, 0.69]
    out = {
        ("sparse_hetero", "abmil"): ([0.80, 0.82, 0.81], flat),
        ("sparse_hetero", "max_pool"): ([0.70, 0.71, 0.72], [0.6, 0.6, 0.6]),
        ("sparse_hetero", "ssg_uot"): ([0.85, 0.88, 0.86], good),
        ("dense_hetero", "abmil"): ([0.9, 0.9, 0.9], flat),
        ("dense_hetero", "max_pool"): ([0.95, 0.96, 0.94], flat),
        ("dense_hetero", "ssg_uot"): ([0.9, 0.905, 0.93], [0.72, 0.70, 0.71]),
    }
    for name in ("sweep_w0.03_h0", "sweep_w0.2_h0"):
        out[(name, "abmil")] = (flat, flat)
        out[(name, "ssg_uot")] = (flat, good)
    return out


def test_plan_lists_table_and_sweep_runs():
    p = params()
    # cells equal to a table dataset reuse its runs
    assert list(datasets(p)) == ["sparse_hetero", "dense_hetero", "sweep_w0.03_h0", "sweep_w0.2_h0"]
    assert datasets(p)["sweep_w0.2_h0"] == {"witness_rate": 0.2, "heterogeneity": 0.0}
    plan = run_plan(p)
    assert len(plan) == 2 * 3 + 2 * 2 and ("sweep_w0.2_h0", "ssg_uot") in plan


def test_table_claims_metrics_and_curves(tmp_path: Path):
    write_runs(tmp_path / "runs", values())
    summarize_study("ssg", params(), SEEDS, tmp_path)
    table = (tmp_path / "table.md").read_text()
    assert "| ssg_uot | 0.86 ± 0.02 | 0.50 ± 0.00 | 0.91 ± 0.01 |" in table
    document = read_json(tmp_path / "claims.json")
    validate_claims(document, "ssg claims.json")
    assert [c["kind"] for c in document["claims"]] == ["paired"] * 6
    claims = {c["statement"]: c for c in document["claims"]}
    bag_sparse = claims["(a) SSG-UOT beats the best baseline (abmil) on bag AUC (sparse_hetero)"]
    # raw p ≈ 0.002, ≈ 0.008 after Holm's correction over the six checks: holds
    assert bag_sparse["holds"] and bag_sparse["p_adjusted"] > bag_sparse["p_value"]
    # on dense_hetero max-pool is the strongest baseline and SSG-UOT does not beat it
    dense = claims["(a) SSG-UOT beats the best baseline (max_pool) on bag AUC (dense_hetero)"]
    assert dense["methods"] == ["ssg_uot", "max_pool"] and not dense["holds"]
    gain = "(c) SSG-UOT's instance AUC gain over ABMIL is larger in sparse_hetero than in "
    gain += "dense_hetero"
    assert claims[gain]["holds"] and claims[gain]["test"] == "welch"  # regimes: no seed pairs them
    # the bag-AUC gain claim has raw p ≈ 0.017 < alpha (Welch) but Holm-adjusted p ≈ 0.051: fails
    bag_gain = claims[gain.replace("instance AUC", "bag AUC")]
    assert bag_gain["holds_unadjusted"] and not bag_gain["holds"]
    assert [c["holds"] for c in document["claims"]] == [True, False, True, False, True, False]
    assert read_json(tmp_path / "metrics.json")["claims_holding"] == "3/6"
    metrics = read_json(tmp_path / "metrics.json")
    dense_max = metrics["datasets"]["dense_hetero"]["max_pool"]
    assert dense_max["bag_auc"]["per_seed"] == [0.95, 0.96, 0.94]
    cells = metrics["sweep"]
    assert [c["dataset"] for c in cells] == [
        "sweep_w0.03_h0",
        "sparse_hetero",
        "sweep_w0.2_h0",
        "dense_hetero",
    ]
    assert abs(cells[0]["gain:instance_auc"] - 0.21) < 1e-9
    assert abs(cells[1]["gain:instance_auc"] - 0.21) < 1e-9
    curves = (tmp_path / "curves.csv").read_text().splitlines()
    # the table's datasets only, one series per (dataset, method); sweep cells are not curves
    assert len(curves) == 1 + 2 * 3 * 2 and not any("sweep" in line for line in curves)
    assert "2,sparse_hetero/ssg_uot,0.863333" in curves


def test_a_run_without_a_metric_is_named(tmp_path: Path):
    write_runs(tmp_path / "runs", values())
    broken = tmp_path / "runs/dense_hetero/abmil/seed1/metrics.json"
    write_json(broken, {"bag_auc": 0.5, "bag_accuracy": 0.5})
    lacks = r"seed1/metrics.json: run metrics lack \['instance_auc'\]"
    with pytest.raises(ValueError, match=lacks):
        load_runs(params(), SEEDS, tmp_path / "runs")
