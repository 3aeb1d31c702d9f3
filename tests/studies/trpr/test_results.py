"""The trpr table, claims, metrics and curves from run files written by hand: the strongest
baseline is chosen per metric, the claims follow the numbers, and the files validate."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from reprolab.core.io import write_json
from reprolab.core.params import load_yaml, study_params
from reprolab.core.summary import summarize_study
from reprolab.studies.trpr import results
from tests.conftest import ROOT

SEEDS = [0, 1, 2]
ROWS = ["ncm", "moe", "lwf", "trpr_card", "trpr_inference"]


def params() -> dict[str, Any]:
    values = study_params({**load_yaml(ROOT / "params.yaml"), "scale": "smoke"}, "trpr")
    values["rows"] = ROWS
    values["claims"]["baselines"] = ["ncm", "moe", "lwf"]
    return values


def row(final: float, forgetting: float, seed: int, routed: bool = True, **extra) -> dict:
    """A row's measures on a 2-task stream; `seed` moves every accuracy a little."""
    shift = 0.01 * seed
    entry = {
        "matrix": [[0.9], [0.9 - forgetting, 2 * (final + shift) - 0.9 + forgetting]],
        "average": (0.9 + final + shift) / 2,
        "final": final + shift,
        "forgetting": forgetting,
        "parameters": 1000 if routed else 0,
        "task_identification": 0.6,
        "values": {},
    }
    if routed:
        entry |= {
            "drift": extra.get("drift", 1.0) + shift,
            "drift_bins": {
                "edge": [0.1, 1.0],
                "loss_rate": [0.0, 0.4],
                "loss_share": [0.1, 0.9 - shift],
            },
            "old_accuracy": 0.5,
            "restored_accuracy": 0.6 + shift,
        }
    return entry | ({"gate_old": 0.3} if "gate" in extra else {})


def run(seed: int) -> dict:
    return {
        "seed": seed,
        "benchmark": "digitstyles",
        "task_classes": [[0, 1], [2, 3]],
        "rows": {
            "ncm": row(0.50, 0.10, seed, routed=False),
            "moe": row(0.40, 0.30, seed, drift=2.0),
            "lwf": row(0.55, 0.20, seed),
            "trpr_card": row(0.35, 0.40, seed, drift=0.5, gate=True),
            "trpr_inference": row(0.60 + 0.005 * seed, 0.05, seed, drift=0.2),
        },
    }


@pytest.fixture
def written(tmp_path: Path) -> Path:
    for seed in SEEDS:
        write_json(tmp_path / "runs" / "digitstyles" / f"seed{seed}" / "metrics.json", run(seed))
    return tmp_path


def test_the_strongest_baseline_is_chosen_per_metric(written):
    runs = results.load_runs(params(), SEEDS, written / "runs")["digitstyles"]
    assert results.strongest(params(), runs, "final") == "lwf"
    assert results.strongest(params(), runs, "forgetting") == "ncm"


def test_claims_follow_the_numbers(written):
    checks = results.claim_checks(
        params(), results.load_runs(params(), SEEDS, written / "runs"), SEEDS
    )
    by_statement = {c["statement"]: c for c in checks}
    assert len(checks) == 12 and [c["kind"] for c in checks].count("sanity") == 1
    inference = [c for c in checks if "inference projection" in c["statement"]]
    card = [c for c in checks if "as carded" in c["statement"]]
    assert inference[0]["methods"] == ["trpr_inference", "lwf"]
    assert [c["methods"][1] for c in card[:3]] == ["lwf", "lwf", "ncm"]
    assert all(c["mean_difference"] < 0 for c in card[:2])  # the card's variant trails
    asymmetry = next(s for s in by_statement if "asymmetric" in s)
    assert by_statement[asymmetry]["holds"]  # the top bin carries ≥ 0.88 of the loss
    small = next(s for s in by_statement if "small routing drift" in s)
    assert by_statement[small]["holds"]


def test_summary_files_validate_and_hold_the_table(written):
    summarize_study("trpr", params(), SEEDS, out_dir=written)
    table = (written / "table.md").read_text()
    assert "TRPR, inference projection" in table and "DigitStyles: final acc (%)" in table
    assert "—" in table  # NCM has no routing drift
    curves = (written / "curves.csv").read_text()
    assert "digitstyles/moe/loss_rate" in curves and "digitstyles/ncm," in curves


def test_a_run_file_of_another_seed_is_refused(written):
    write_json(written / "runs" / "digitstyles" / "seed1" / "metrics.json", run(2))
    with pytest.raises(
        ValueError, match=r"seed1/metrics.json: holds the run of digitstyles seed 2"
    ):
        results.load_runs(params(), SEEDS, written / "runs")
