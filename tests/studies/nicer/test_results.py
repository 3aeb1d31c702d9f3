"""The nicer table, claims, metrics and curves from constructed per-seed run files (the shape
jobs.run_seed writes): absent cells, the strongest prior by mean, each claim's failure mode and
the sanity checks."""

from __future__ import annotations

import copy
import math
from pathlib import Path

import numpy as np
import pytest

from reprolab.core.io import read_json, write_json
from reprolab.core.summary import summarize_study
from reprolab.studies.nicer.results import (
    COLUMNS,
    NAMES,
    claim_checks,
    curve_rows,
    load_runs,
    study_metrics,
    table,
)

SEEDS = [0, 1, 2]
ROWS = ["random", "kmeans", "gmm", "herding", "kmeans_dm", "dpmeans", "nicer", "full"]
PARAMS = {
    "rows": ROWS,
    "prior": ["random", "kmeans", "gmm", "herding"],
    "ablations": ["kmeans_dm", "dpmeans"],
    "budgets": [4, 8, 16],
    "budget": 4,
    "test_fraction": 0.3,
    "claims": {"alpha": 0.05, "min_effect": 0.0, "min_rho": 0.3, "budget_margin": 0.0},
    "table_digits": 3,
}
"""The parts of the nicer section the summary reads."""

SLIDES = [f"slide_{i:03d}" for i in range(6)]
TEST = [0, 0, 1, 0, 1, 1]
LABELS = [0, 1, 0, 1, 0, 1]
TYPES = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
TILES = [100, 120, 130, 140, 150, 160]
BACC = {
    "random": 0.60,
    "kmeans": 0.70,
    "gmm": 0.72,  # the strongest prior by balanced accuracy
    "herding": 0.65,
    "kmeans_dm": 0.74,
    "dpmeans": 0.73,
    "nicer": 0.80,
    "full": 0.85,
}
MMD = {
    "random": 0.30,
    "kmeans": 0.10,
    "gmm": 0.12,
    "herding": 0.08,  # the closest prior
    "kmeans_dm": 0.06,
    "dpmeans": 0.09,
    "nicer": 0.04,
}


def sizes(row: str, budget: int) -> list[int]:
    """Prototypes per slide: B everywhere for fixed K; rising with the tissue types (mean B)
    for the adaptive rows."""
    if row in ("dpmeans", "nicer"):
        return [budget + d for d in (-2, -1, 0, 0, 1, 2)]
    return [budget] * len(SLIDES)


def result(row: str, budget: int, i: int, bacc: dict, mmd: dict) -> dict:
    """One (row, budget) entry of seed index i, as jobs.run_seed writes it."""
    accuracy = bacc[row] + 0.01 * budget / 4 + (0.005 if row == "nicer" else 0.002) * i
    counts = sizes(row, budget)
    return {
        "balanced_accuracy": accuracy,
        "auc": accuracy + 0.05,
        "instances_per_epoch": sum(k for k, t in zip(counts, TEST, strict=True) if not t),
        "prototypes_mean": float(np.mean(counts)),
        "prototypes_std": float(np.std(counts)),
        "prototypes": counts,
        "mmd2_test": mmd[row] * (1 + 0.1 * i) * 4 / budget,
        "operations_per_slide": 1000.0 * budget,
        "weights_sum_error": 1e-7,
    }


def make_run(seed: int, bacc: dict = BACC, mmd: dict = MMD, types: list = TYPES) -> dict:
    """One seed's metrics.json: ablations at the table's budget only, `full` once."""
    i = SEEDS.index(seed)
    rows: dict = {}
    for row in ROWS:
        if row == "full":
            rows[row] = {
                "full": {
                    "balanced_accuracy": bacc[row] + 0.002 * i,
                    "auc": bacc[row] + 0.05,
                    "instances_per_epoch": sum(
                        n for n, t in zip(TILES, TEST, strict=True) if not t
                    ),
                }
            }
            continue
        budgets = [PARAMS["budget"]] if row in PARAMS["ablations"] else PARAMS["budgets"]
        rows[row] = {str(b): result(row, b, i, bacc, mmd) for b in budgets}
    return {
        "seed": seed,
        "slides": SLIDES,
        "test": TEST,
        "labels": LABELS,
        "heterogeneity": types,
        "tiles": TILES,
        "sigma2": 1.5,
        "lambda": {"4": 2.0, "8": 1.0, "16": 0.5},
        "tuned": {row: {"lr": 0.003} for row in ROWS},
        "rows": rows,
    }


def runs(**changes) -> list[dict]:
    return [make_run(s, **changes) for s in SEEDS]


def test_table_has_every_row_and_declares_the_cells_that_do_not_apply():
    out = table(PARAMS, runs(), SEEDS)
    assert out.methods == [NAMES[r] for r in ROWS]
    assert out.columns == list(COLUMNS.values())
    full = NAMES["full"]
    assert out.not_applicable == {
        (full, COLUMNS["mmd2_test"]),
        (full, COLUMNS["operations"]),
    }
    cells = {(r.method, r.column) for r in out.records}
    for row in ROWS:
        for column in COLUMNS.values():
            assert ((NAMES[row], column) in cells) != ((NAMES[row], column) in out.not_applicable)
    assert len(out.records) == len(SEEDS) * (len(ROWS) * len(COLUMNS) - 2)


def test_table_values_are_at_the_tables_budget():
    out = table(PARAMS, runs(), SEEDS)
    value = {(r.method, r.column, r.seed): r.value for r in out.records}
    nicer, full = NAMES["nicer"], NAMES["full"]
    assert value[(nicer, COLUMNS["balanced_accuracy"], 0)] == pytest.approx(0.81)
    assert value[(nicer, COLUMNS["prototypes_mean"], 1)] == 4.0
    assert value[(nicer, COLUMNS["operations"], 2)] == pytest.approx(4.0)  # thousands
    assert value[(full, COLUMNS["prototypes_mean"], 0)] == pytest.approx(np.mean(TILES))
    assert value[(full, COLUMNS["prototypes_std"], 0)] == pytest.approx(np.std(TILES))
    assert value[(full, COLUMNS["training_cost"], 0)] == pytest.approx(100.0)
    # NICER's training slides (0, 1, 3) carry 2 + 3 + 4 prototypes against 100 + 120 + 140 tiles.
    assert value[(nicer, COLUMNS["training_cost"], 0)] == pytest.approx(100.0 * 9 / 360)


def test_claim_checks_are_four_counted_checks_and_two_sanity_checks():
    checks = claim_checks(PARAMS, runs(), SEEDS)
    assert [c["kind"] for c in checks] == ["paired", "paired", "bound", "bound", "sanity", "sanity"]
    assert all(c["holds"] for c in checks)
    assert checks[0]["methods"] == ["nicer", "gmm"]  # the strongest prior by accuracy
    assert checks[1]["methods"] == ["nicer", "herding"]  # the prior with the lowest MMD²
    assert checks[1]["rule"]["direction"] == "less"


def test_a_better_prior_fails_claim_1():
    bacc = {**BACC, "kmeans": 0.90}
    checks = claim_checks(PARAMS, runs(bacc=bacc), SEEDS)
    assert checks[0]["methods"] == ["nicer", "kmeans"]
    assert not checks[0]["holds"]
    assert not checks[2]["holds"]  # and NICER trails at every budget


def test_nicer_level_with_the_best_prior_fails_claim_1_by_the_minimum_effect():
    params = copy.deepcopy(PARAMS)
    params["claims"]["min_effect"] = 0.2  # NICER leads gmm by about 0.08
    assert not claim_checks(params, runs(), SEEDS)[0]["holds"]


def test_a_looser_prior_mmd_fails_claim_2():
    mmd = {**MMD, "random": 0.01}
    check = claim_checks(PARAMS, runs(mmd=mmd), SEEDS)[1]
    assert check["methods"] == ["nicer", "random"] and not check["holds"]


def test_trailing_at_one_budget_fails_the_dominance_check_only():
    trailing = runs()
    for run in trailing:
        run["rows"]["nicer"]["16"]["balanced_accuracy"] -= 0.2
    checks = claim_checks(PARAMS, trailing, SEEDS)
    assert checks[0]["holds"]
    dominance = checks[2]
    assert not dominance["holds"]
    failing = [name for name, v in dominance["values"].items() if v < 0]
    assert failing == [f"B=16 vs {NAMES['gmm']}"]


def test_capacity_claim_is_one_value_when_every_seed_gave_the_same_capacities():
    check = claim_checks(PARAMS, runs(), SEEDS)[3]
    assert check["holds"] and len(check["values"]) == 1
    assert next(iter(check["values"].values())) == pytest.approx(0.985, abs=1e-3)
    reversed_types = claim_checks(PARAMS, runs(types=TYPES[::-1]), SEEDS)[3]
    assert not reversed_types["holds"]
    assert next(iter(reversed_types["values"].values())) < 0


def test_capacity_claim_fails_when_one_seeds_capacity_ignores_the_tissue_types():
    flat = runs()
    flat[1]["rows"]["nicer"]["4"]["prototypes"] = [5, 3, 4, 4, 3, 5]  # ρ = 0 on seed 1
    check = claim_checks(PARAMS, flat, SEEDS)[3]
    assert set(check["values"]) == {"seed 0", "seed 1", "seed 2"}
    assert check["values"]["seed 0"] == pytest.approx(0.985, abs=1e-3)
    assert check["values"]["seed 1"] == pytest.approx(0.0, abs=1e-9)
    assert not check["holds"]


def test_capacity_claim_has_no_value_without_tissue_types():
    check = claim_checks(PARAMS, runs(types=[None] * len(SLIDES)), SEEDS)[3]
    assert check["kind"] == "bound" and not check["holds"]
    assert all(math.isnan(v) for v in check["values"].values())


def test_sanity_checks_catch_weights_off_the_simplex_and_dpmeans_over_budget():
    broken = runs()
    broken[1]["rows"]["kmeans"]["8"]["weights_sum_error"] = 1e-3
    broken[2]["rows"]["dpmeans"]["4"]["prototypes_mean"] = 4.5
    weights, capacity = claim_checks(PARAMS, broken, SEEDS)[4:]
    assert not weights["holds"] and weights["details"]["off"] == ["seed 1 kmeans B=8"]
    assert not capacity["holds"] and capacity["details"]["over"] == ["seed 2 B=4: 4.50"]


def test_curves_have_one_series_per_row_over_the_budgets_each_ran_at():
    frame = curve_rows(PARAMS, runs(), SEEDS)
    xs = {series: sorted(group["x"]) for series, group in frame.groupby("series")}
    assert set(xs) == {f"{row}_bacc" for row in ROWS}
    for row in ROWS:
        expected = [4.0] if row in PARAMS["ablations"] else [4.0, 8.0, 16.0]
        assert xs[f"{row}_bacc"] == expected, row
    nicer = frame[(frame.series == "nicer_bacc") & (frame.x == 8.0)]
    assert float(nicer["y"].iloc[0]) == pytest.approx(0.80 + 0.02 + 0.005)


def test_study_metrics_hold_the_budgets_each_row_ran_at():
    metrics = study_metrics(PARAMS, runs(), SEEDS)
    assert set(metrics["rows"]["nicer"]) == {"4", "8", "16"}
    assert set(metrics["rows"]["dpmeans"]) == {"4"}
    assert set(metrics["rows"]["full"]) == {"full"}
    assert metrics["capacity"]["prototypes"] == sizes("nicer", 4)
    assert metrics["capacity"]["heterogeneity"] == TYPES
    assert metrics["lambda"] == {"4": 2.0, "8": 1.0, "16": 0.5}


def test_claim_checks_do_not_mutate_the_runs():
    original = runs()
    copied = copy.deepcopy(original)
    claim_checks(PARAMS, copied, SEEDS)
    table(PARAMS, copied, SEEDS)
    assert copied == original


def test_summary_files_from_run_files(tmp_path: Path):
    for run in runs():
        write_json(tmp_path / "runs" / f"seed{run['seed']}" / "metrics.json", run)
    assert [r["seed"] for r in load_runs(PARAMS, SEEDS, tmp_path / "runs")] == SEEDS
    summarize_study("nicer", PARAMS, SEEDS, out_dir=tmp_path)
    document = read_json(tmp_path / "claims.json")
    assert (document["claims_holding"], document["claims_counted"]) == (4, 4)
    assert read_json(tmp_path / "metrics.json")["claims_holding"] == "4/4"
    table_text = (tmp_path / "table.md").read_text()
    assert NAMES["nicer"] in table_text and "—" in table_text
