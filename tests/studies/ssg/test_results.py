"""Table, claims and metrics.json from per-run metrics files; the run plan and sweep names."""

from __future__ import annotations

from pathlib import Path

from reprolab.core.io import read_json, write_json
from reprolab.studies.ssg.results import datasets, run_plan, summarize_study

METHODS = ["abmil", "max_pool", "ssg_uot"]


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
            "sparse_heterogeneous": "sparse_hetero",
            "compare_regimes": ["dense_hetero"],
        },
        "table_digits": 2,
    }


def write_runs(root: Path, values: dict) -> None:
    for (dataset, method), (bag, inst) in values.items():
        for seed in range(3):
            metrics = {"bag_auc": bag[seed], "bag_accuracy": 0.5, "instance_auc": inst[seed]}
            write_json(root / dataset / method / f"seed{seed}" / "metrics.json", metrics)


def test_plan_lists_table_and_sweep_runs():
    p = params()
    # cells equal to a table dataset reuse its runs
    assert list(datasets(p)) == ["sparse_hetero", "dense_hetero", "sweep_w0.03_h0", "sweep_w0.2_h0"]
    assert datasets(p)["sweep_w0.2_h0"] == {"witness_rate": 0.2, "heterogeneity": 0.0}
    plan = run_plan(p)
    assert len(plan) == 2 * 3 + 2 * 2 and ("sweep_w0.2_h0", "ssg_uot") in plan


def test_table_claims_and_metrics(tmp_path: Path):
    good, flat = [0.9, 0.92, 0.91], [0.7, 0.71, 0.69]
    values = {
        ("sparse_hetero", "abmil"): ([0.80, 0.82, 0.81], flat),
        ("sparse_hetero", "max_pool"): ([0.70, 0.71, 0.72], [0.6, 0.6, 0.6]),
        ("sparse_hetero", "ssg_uot"): ([0.85, 0.88, 0.86], good),
        ("dense_hetero", "abmil"): ([0.9, 0.9, 0.9], flat),
        ("dense_hetero", "max_pool"): ([0.95, 0.96, 0.94], flat),
        ("dense_hetero", "ssg_uot"): ([0.9, 0.905, 0.93], [0.72, 0.70, 0.71]),
    }
    for name in ("sweep_w0.03_h0", "sweep_w0.2_h0"):
        values[(name, "abmil")] = (flat, flat)
        values[(name, "ssg_uot")] = (flat, good)
    write_runs(tmp_path / "runs", values)
    summarize_study(params(), [0, 1, 2], tmp_path / "runs", tmp_path)
    table = (tmp_path / "table.md").read_text()
    assert "| ssg_uot | 0.86 ± 0.02 | 0.50 ± 0.00 | 0.91 ± 0.01 |" in table
    claims = {c["statement"]: c for c in read_json(tmp_path / "claims.json")["claims"]}
    bag_sparse = claims["(a) SSG-UOT beats the best baseline (abmil) on bag AUC (sparse_hetero)"]
    assert bag_sparse["holds"]
    # on dense_hetero max-pool is the strongest baseline and SSG-UOT does not beat it
    assert not claims["(a) SSG-UOT beats the best baseline (max_pool) on bag AUC (dense_hetero)"][
        "holds"
    ]
    gain = "(c) SSG-UOT's instance AUC gain over ABMIL is larger in sparse_hetero than in "
    gain += "dense_hetero"
    assert claims[gain]["holds"]
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
