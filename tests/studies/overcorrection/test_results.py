"""The overcorrection table and claims from synthetic run files: rows and columns, the cells
that do not apply, each claim on planted values (holding and failing), the strongest baseline."""

from __future__ import annotations

import copy

import numpy as np

from reprolab.studies.overcorrection import results
from tests.studies.overcorrection.test_workflow_io import PARAMS

SEEDS = [0, 1, 2, 3, 4]
READERS, CHANNELS = list(PARAMS["readers"]), list(PARAMS["channels"])


def planted_runs(over_growth: float = 0.5, theory_mse: float = 0.1, r2: float = 0.95) -> list:
    """Run files where top-k's over-correction rises by `over_growth` from the smallest k to the
    largest, the theory's MSE is `theory_mse`, MMR's 1.0 and the rest 2.0 (seed noise added)."""
    ks = PARAMS["ks"]
    runs = []
    for seed in SEEDS:
        noise = 0.01 * np.random.default_rng(seed).standard_normal(4)
        readers = {}
        for reader in READERS:
            channels = {}
            for channel in CHANNELS:
                selectors = {}
                for selector in PARAMS["selectors"]:
                    mse = {"theory": theory_mse, "mmr": 1.0}.get(selector, 2.0) + noise[0]
                    selectors[selector] = {
                        str(k): {
                            "mse": mse,
                            "over": (over_growth * i / (len(ks) - 1) + noise[1] ** 2)
                            if selector == "top_k"
                            else 0.0,
                            "under": 0.1,
                            "r2": float("nan") if selector == "none" else r2,
                        }
                        for i, k in enumerate(ks)
                    }
                channels[channel] = {
                    "r2_pooled": 1.0 if channel == "memory" else r2 + noise[2] / 10,
                    "selectors": selectors,
                }
            readers[reader] = {
                "training": {"final_loss": 0.1, "prior_r2": 0.99},
                "calibration": {"etas": [0.5], "eta": 0.5, "r2": 0.99},
                "channels": channels,
            }
        runs.append({"seed": seed, "ks": ks, "readers": readers})
    return runs


def by_statement(checks: list[dict], *words: str) -> list[dict]:
    return [c for c in checks if all(word in c["statement"] for word in words)]


def test_the_table_has_a_row_per_reader_channel_and_selector_and_four_columns_per_k():
    table = results.table(PARAMS, planted_runs(), SEEDS)
    assert len(table.methods) == len(READERS) * len(CHANNELS) * len(PARAMS["selectors"])
    assert len(table.columns) == 4 * len(PARAMS["ks"])
    assert ("linear/icl/none", f"R² k={PARAMS['ks'][0]}") in table.not_applicable
    assert not any(
        record.method.endswith("/none") and "R²" in record.column for record in table.records
    )


def test_planted_effects_make_every_claim_hold():
    checks = results.claim_checks(PARAMS, planted_runs(), SEEDS)
    settings = len(READERS) * len(CHANNELS)
    assert len(by_statement(checks, "over-corrects more")) == settings
    assert len(by_statement(checks, "predicts")) == settings - len(READERS)
    assert len(by_statement(checks, "lower error")) == settings
    assert all(c["holds"] for c in checks if c["kind"] != "sanity")
    assert [c["holds"] for c in checks if c["kind"] == "sanity"] == [True] * len(READERS)


def test_the_theory_is_compared_with_the_strongest_baseline():
    (check,) = by_statement(
        results.claim_checks(PARAMS, planted_runs(), SEEDS), "softmax reader, rag:", "lower"
    )
    assert check["methods"] == ["theory", "mmr"]


def test_claims_fail_where_the_planted_effects_are_absent():
    checks = results.claim_checks(
        PARAMS, planted_runs(over_growth=0.0, theory_mse=1.5, r2=0.5), SEEDS
    )
    assert not any(c["holds"] for c in checks if c["kind"] != "sanity")


def test_an_inexact_memory_read_fails_the_sanity_check():
    runs = copy.deepcopy(planted_runs())
    runs[2]["readers"]["linear"]["channels"]["memory"]["r2_pooled"] = 0.99
    sanity = [c for c in results.claim_checks(PARAMS, runs, SEEDS) if c["kind"] == "sanity"]
    assert [c["holds"] for c in sanity] == [False, True]


def test_curves_hold_mse_and_over_correction_along_k():
    frame = results.curve_rows(PARAMS, planted_runs(), SEEDS)
    series = set(frame["series"])
    assert "linear/icl/top_k/over" in series and "softmax/memory/theory/mse" in series
    assert sorted(set(frame["x"])) == [float(k) for k in PARAMS["ks"]]
