"""The nas table, claims, metrics and curves from run files written by hand: each claim follows
the runs (exponential or linear growth, the horizon ratio, long-run and single-edit scores, the
counted overhead, NAS's anchor norm), and the summary files validate."""

from __future__ import annotations

import math
from typing import Any

import pytest

from reprolab.core.io import read_json, write_json
from reprolab.core.summary import summarize_study
from reprolab.studies.nas import results
from reprolab.studies.nas.growth import growth_fits
from tests.studies.nas.conftest import CLAIMED, METHODS

SEEDS = [0, 1, 2]
PARAMS: dict[str, Any] = {
    "table_digits": 3,
    "methods": METHODS,
    "claims": {
        **CLAIMED,
        "horizon_ratio": 4.0,
        "single_edit_margin": 0.05,
        "overhead": 0.01,
    },
}
EDITS = [10, 20, 30, 40, 50, 60]


def method_record(
    seed: int, growth: str, horizon: int, long_run: float, single: float, wanted: float
) -> dict[str, Any]:
    """One method's record: ‖W‖ growing linearly or exponentially, checkpoints whose last
    composite is `long_run`."""
    norms = [
        10.0 * math.exp(0.03 * e) if growth == "exponential" else 10.0 + 0.5 * e for e in EDITS
    ]
    batches = [
        {
            "edits": e,
            "weight_norm": [5.0, w],
            "vstar": [3.0, 3.2],
            "delta": [1.0],
            "wanted": [wanted],
        }
        for e, w in zip(EDITS, norms, strict=True)
    ]
    end = long_run + 0.01 * seed
    checkpoints = [
        {
            "edits": 10,
            "efficacy": single,
            "generalisation": single,
            "specificity": 1.0,
            "generic_loss": 1.0,
        },
        {
            "edits": 60,
            "efficacy": end,
            "generalisation": end,
            "specificity": end,
            "generic_loss": 1.5,
        },
    ]
    return {
        "batches": batches,
        "checkpoints": checkpoints,
        "weight_growth": growth_fits(EDITS, norms),
        "vstar_growth": growth_fits(EDITS, [3.1] * 5 + [3.2]),
        "horizon": horizon,
        "horizon_censored": horizon == 60,
        "long_run": end,
        "single_edit_efficacy": single,
    }


def run(seed: int, plain_growth: str = "exponential") -> dict[str, Any]:
    methods = {
        "memit": method_record(seed, plain_growth, 10, 0.2, 0.9, 3.1),
        "memit_nas": method_record(seed, "linear", 60, 0.4 + 0.02 * seed, 0.88, 2.0),
        "memit_tight": method_record(seed, "exponential", 20, 0.25, 0.8, 3.1),
        "rome": method_record(seed, "exponential", 10, 0.3, 0.9, 3.1),
        "rome_nas": method_record(seed, "linear", 20, 0.3 - 0.02 * seed, 0.9, 2.0),
    }
    return {
        "seed": seed,
        "edits": 60,
        "tuned": {"weight": 100.0, "ridge": 0.001},
        "anchors": {"vstar": 2.0, "value": 0.5},
        "generic_loss_unedited": 1.0,
        "weight_unedited": [5.0, 8.0],
        "operations": {name: 1000 + (1 if "nas" in name else 0) for name in methods},
        "methods": methods,
    }


def by_statement(checks: list[dict], start: str) -> dict:
    return next(c for c in checks if c["statement"].startswith(start))


def test_each_claim_follows_the_runs():
    checks = results.claim_checks(PARAMS, [run(s) for s in SEEDS], SEEDS)
    assert by_statement(checks, "Norm growth")["holds"]
    horizon = by_statement(checks, "NAS extends")
    assert horizon["holds"] and horizon["values"] == {"0": 6.0, "1": 6.0, "2": 6.0}
    long_run = by_statement(checks, "NAS improves long-run editing performance")
    assert long_run["details"]["relative_improvement"] == pytest.approx(
        (0.42 + 0.01) / (0.2 + 0.01) - 1.0
    )
    assert by_statement(checks, "NAS does not hurt")["kind"] == "paired"
    assert by_statement(checks, "NAS's computational overhead")["holds"]
    assert not by_statement(checks, "NAS improves long-run editing with ROME")["holds"]
    sanity = [c for c in checks if c["kind"] == "sanity"]
    assert len(sanity) == 2 and all(c["holds"] for c in sanity)


def test_linear_growth_fails_the_exponential_claim_and_a_wrong_norm_the_sanity_check():
    runs = [run(s, plain_growth="linear") for s in SEEDS]
    runs[1]["methods"]["rome_nas"]["batches"][2]["wanted"] = [2.1]
    checks = results.claim_checks(PARAMS, runs, SEEDS)
    assert not by_statement(checks, "Norm growth")["holds"]
    assert not by_statement(checks, "rome_nas rescales")["holds"]
    assert by_statement(checks, "memit_nas rescales")["holds"]


def test_summary_files_validate_and_curves_hold_every_series(tmp_path):
    for seed in SEEDS:
        write_json(tmp_path / "runs" / f"seed{seed}" / "metrics.json", run(seed))
    summarize_study("nas", PARAMS, SEEDS, out_dir=tmp_path)
    claims = read_json(tmp_path / "claims.json")
    assert claims["claims_counted"] == 7
    table = (tmp_path / "table.csv").read_text()
    assert "memit_nas" in table and "horizon (edits)" in table
    curves = (tmp_path / "curves.csv").read_text().splitlines()
    assert sum(line.split(",")[1] == "memit/weight_norm" for line in curves) == len(EDITS)
    metrics = read_json(tmp_path / "metrics.json")
    assert metrics["methods"]["memit"]["weight_ratio"]["mean"] == pytest.approx(
        10.0 * math.exp(1.8) / 8.0
    )
