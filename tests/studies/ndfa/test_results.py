"""The ndfa summary (table, claims, metrics, curves) from constructed run files."""

from pathlib import Path

import numpy as np
import pytest

from reprolab.core.io import read_json, write_h5, write_json
from reprolab.core.schemas import validate_claims
from reprolab.core.summary import summarize_study
from reprolab.studies.ndfa.results import claim_checks

SEEDS = [0, 1, 2]
ACCURACY = {
    "bp": [0.95, 0.96, 0.97],
    "dfa": [0.80, 0.81, 0.79],
    "linfa": [0.85, 0.84, 0.86],
    "ndfa": [0.90, 0.92, 0.91],
}
ALIGNMENT = {"bp": 1.0, "dfa": 0.2, "linfa": 0.3, "ndfa": 0.6}


def params() -> dict:
    return {
        "methods": ["bp", "dfa", "linfa", "ndfa"],
        "tasks": {"toy": {}},
        "table_digits": 2,
        "claims": {"alpha": 0.05},
    }


def write_runs(root: Path, accuracy: dict[str, list[float]], alignment: dict[str, float]) -> None:
    """metrics.json and a two-epoch curves.h5 per method and seed (the last epoch = the final
    accuracy)."""
    for method, values in accuracy.items():
        for seed, acc in enumerate(values):
            run = root / "toy" / method / f"seed{seed}"
            write_h5(
                run / "curves.h5",
                {
                    "epoch": np.array([1, 2]),
                    "test_accuracy": np.array([acc / 2, acc]),
                    "train_loss": np.zeros(2),
                },
            )
            write_json(
                run / "metrics.json", {"test_accuracy": acc, "mean_alignment": alignment[method]}
            )


def test_table_claims_metrics_and_curves_from_runs(tmp_path: Path):
    write_runs(tmp_path / "runs", ACCURACY, ALIGNMENT)
    summarize_study("ndfa", params(), SEEDS, tmp_path)
    table = (tmp_path / "table.md").read_text()
    assert "| ndfa | 91.00 ± 1.00 | 5.00 ± 1.00 | 0.60 ± 0.00 |" in table
    assert table.splitlines()[0].startswith("| method | toy: test accuracy (%) | toy: gap to BP")
    document = read_json(tmp_path / "claims.json")
    validate_claims(document, "ndfa claims.json")
    claims = document["claims"]
    assert [c["kind"] for c in claims] == ["paired"] * 4
    # a constant positive alignment difference counts as significant (zero-variance case)
    assert [c["holds"] for c in claims] == [True, True, True, True]
    assert [c["methods"] for c in claims] == [["ndfa", "dfa"]] * 3 + [["ndfa", "linfa"]]
    assert (document["claims_holding"], document["claims_counted"]) == (4, 4)
    metrics = read_json(tmp_path / "metrics.json")
    assert metrics["toy"]["dfa"]["test_accuracy"]["per_seed"] == [0.8, 0.81, 0.79]
    assert metrics["claims_holding"] == "4/4"
    curves = (tmp_path / "curves.csv").read_text().splitlines()
    assert curves[0] == "x,series,y"
    assert "2,toy/ndfa,91.000000" in curves and "1,toy/ndfa,45.500000" in curves


def test_holm_correction_decides_borderline_accuracy_claims(tmp_path: Path):
    # NDFA - DFA = 1, 3, 2 pp: raw one-sided p ≈ 0.038 for claims 1 and 2 (the same test);
    # Holm over the family multiplies the smaller of the two tied p-values by 2, so neither holds.
    accuracy = {**ACCURACY, "ndfa": [0.81, 0.84, 0.81], "linfa": [0.70, 0.71, 0.69]}
    write_runs(tmp_path / "runs", accuracy, ALIGNMENT)
    summarize_study("ndfa", params(), SEEDS, tmp_path)
    claims = read_json(tmp_path / "claims.json")["claims"]
    first, gap = claims[0], claims[1]
    assert first["p_value"] == pytest.approx(gap["p_value"])
    assert 0.025 < first["p_value"] < 0.05
    assert first["holds_unadjusted"] and gap["holds_unadjusted"]
    assert not first["holds"] and not gap["holds"]
    assert first["p_adjusted"] == pytest.approx(2 * first["p_value"])
    assert claims[2]["holds"] and claims[3]["holds"]
    assert read_json(tmp_path / "metrics.json")["claims_holding"] == "2/4"


def test_gap_claim_mirrors_accuracy_claim():
    acc = {
        "bp": [0.9, 0.9, 0.9],
        "dfa": [0.7, 0.8, 0.75],
        "linfa": [0.7, 0.7, 0.7],
        "ndfa": [0.72, 0.79, 0.8],
    }
    runs = {
        "metrics": {
            "toy": {
                m: [{"test_accuracy": a, "mean_alignment": 0.5 + 0.01 * i} for i, a in enumerate(v)]
                for m, v in acc.items()
            }
        }
    }
    checks = claim_checks(params(), runs, SEEDS)
    assert np.isclose(checks[0]["p_value"], checks[1]["p_value"])
    assert checks[0]["holds"] == checks[1]["holds"]
    assert checks[1]["rule"]["direction"] == "less"
