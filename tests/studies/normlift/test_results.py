"""normlift's table, claims and curves on hand-made run files."""

from __future__ import annotations

import copy

import numpy as np
import pytest

from reprolab.studies.normlift import results
from reprolab.studies.normlift.workflow_io import ROWS
from tests.conftest import study_section

SEEDS = [0, 1, 2]


def run(seed: int, gain: float) -> dict:
    """One seed's metrics: NormLift `gain` above WAvg, kNN-avg half of it, Distill below."""
    base = 0.5 + 0.01 * seed
    miou = {"distill": base - 0.1, "maxw": base - 0.05, "wavg": base, "wavg_knn": base + gain / 2}
    miou.update({m: base + gain for m in ROWS if m.startswith("normlift")})
    miou["normlift_raw"] = base
    methods = {
        m: {
            "miou_3d": v,
            "macc_3d": v,
            "miou_2d": v,
            "acc_low_support": v,
            "acc_high_support": None,
            "work": 1000 if m == "distill" else (12 if m.startswith("normlift") else 10),
        }
        for m, v in miou.items()
    }
    return {
        "methods": methods,
        "auroc": {"W": 0.7, "r": 0.6, "rho": 0.65 + 0.01 * seed, "rho_discount": None},
        "sanity": {"closed_form_min_cosine": 1.0, "decomposition_max_error": 1e-15},
        "observed_share": 0.5,
        "low_support_share": 0.1,
        "reliability_bins": {
            name: {"centre": [0.25, 0.75], "accuracy": [0.5, 1.0], "count": [1 + seed, 3]}
            for name in ("r", "rho")
        },
    }


@pytest.fixture
def params() -> dict:
    return copy.deepcopy(study_section("normlift", "smoke"))


def test_claims_pick_the_strongest_averaging_rival_and_hold_on_a_clear_gain(params):
    runs = [run(s, 0.05) for s in SEEDS]
    checks = results.claim_checks(params, runs, SEEDS)
    first = checks[0]
    assert "WAvg+kNN-avg" in first["statement"] and first["holds"]
    assert [c["kind"] for c in checks] == ["paired"] * 4 + ["bound"] + ["sanity"] * 3
    assert all(c["holds"] for c in checks)


def test_claims_fail_without_a_gain(params):
    runs = [run(s, 0.0) for s in SEEDS]
    checks = results.claim_checks(params, runs, SEEDS)
    assert not checks[0]["holds"] and not checks[2]["holds"]


def test_table_shows_auroc_only_for_rows_that_use_a_score_and_work_relative_to_wavg(params):
    table = results.table(params, [run(s, 0.05) for s in SEEDS], SEEDS)
    auroc = results.COLUMNS["auroc"]
    assert (ROWS["maxw"], auroc) in table.not_applicable
    assert (ROWS["normlift"], auroc) not in table.not_applicable
    work = {r.method: r.value for r in table.records if r.column == results.COLUMNS["work"]}
    assert work[ROWS["distill"]] == 100 and work[ROWS["normlift"]] == pytest.approx(1.2)
    low = [r.value for r in table.records if r.column == results.COLUMNS["acc_high_support"]]
    assert all(np.isnan(low))  # a null score stays missing, never zero


def test_curves_pool_the_bins_by_count(params):
    curves = results.curve_rows(params, [run(s, 0.05) for s in SEEDS], SEEDS)
    low = curves[(curves["series"] == "rho") & (curves["x"].astype(float) == 0.25)]["y"].item()
    assert float(low) == pytest.approx(0.5)
    assert set(curves["series"]) == {"r", "rho"}
