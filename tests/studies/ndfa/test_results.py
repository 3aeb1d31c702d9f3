from pathlib import Path

import numpy as np

from reprolab.core.io import read_json, write_json
from reprolab.studies.ndfa.results import claim_checks, summarize_study


def params() -> dict:
    return {
        "methods": ["bp", "dfa", "linfa", "ndfa"],
        "tasks": {"toy": {}},
        "table_digits": 2,
        "claims": {"alpha": 0.05},
    }


def write_runs(root: Path, accuracy: dict[str, list[float]], alignment: dict[str, float]) -> None:
    for method, values in accuracy.items():
        for seed, acc in enumerate(values):
            write_json(
                root / "toy" / method / f"seed{seed}" / "metrics.json",
                {"test_accuracy": acc, "mean_alignment": alignment[method]},
            )


def test_table_claims_and_metrics_from_runs(tmp_path: Path):
    accuracy = {
        "bp": [0.95, 0.96, 0.97],
        "dfa": [0.80, 0.81, 0.79],
        "linfa": [0.85, 0.84, 0.86],
        "ndfa": [0.90, 0.92, 0.91],
    }
    write_runs(tmp_path / "runs", accuracy, {"bp": 1.0, "dfa": 0.2, "linfa": 0.3, "ndfa": 0.6})
    summarize_study(params(), [0, 1, 2], tmp_path / "runs", tmp_path)
    table = (tmp_path / "table.md").read_text()
    assert "| ndfa | 91.00 ± 1.00 | 5.00 ± 1.00 |" in table
    claims = read_json(tmp_path / "claims.json")["claims"]
    # a constant positive alignment difference counts as significant (zero-variance case)
    assert [c["holds"] for c in claims] == [True, True, True, True]
    metrics = read_json(tmp_path / "metrics.json")
    assert metrics["toy"]["dfa"]["test_accuracy"]["per_seed"] == [0.8, 0.81, 0.79]


def test_gap_claim_mirrors_accuracy_claim():
    acc = {
        "bp": [0.9, 0.9, 0.9],
        "dfa": [0.7, 0.8, 0.75],
        "linfa": [0.7, 0.7, 0.7],
        "ndfa": [0.72, 0.79, 0.8],
    }
    runs = {
        "toy": {
            m: [{"test_accuracy": a, "mean_alignment": 0.5 + 0.01 * i} for i, a in enumerate(v)]
            for m, v in acc.items()
        }
    }
    checks = claim_checks(runs, [0, 1, 2], 0.05)
    assert np.isclose(checks[0]["p_value"], checks[1]["p_value"])
    assert checks[0]["holds"] == checks[1]["holds"]
