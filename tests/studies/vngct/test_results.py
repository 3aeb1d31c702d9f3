"""The study's table, claims and metrics from per-run metrics files."""

from __future__ import annotations

import pandas as pd
import pytest

from reprolab.core.io import read_json, write_json
from reprolab.studies.vngct.results import run_scores, summarize_study

SEEDS = [0, 1, 2]
TASKS = ["digit", "plus", "mixed"]


def fake_run(method: str, seed: int, final: float) -> dict:
    """A metrics.json as run_method writes it, with chosen scores."""
    return {
        "method": method,
        "seed": seed,
        "tasks": TASKS,
        "final_accuracy": final,
        "average_accuracy": final + 0.1,
        "backward_transfer": -0.2,
        "visual_forgetting": 0.5 - final,
        "text_forgetting": 0.1,
        "swap": {
            "after_task": [0.8, float("nan")],
            "final_projector": [0.6, float("nan")],
            "old_projector": [0.2, float("nan")],
        },
        "held_out_necessity": [
            {"visual_mean": 1.5, "text_mean": 0.0, "auroc": 0.9},
            {"visual_mean": float("nan"), "text_mean": 0.01, "auroc": float("nan")},
            {"visual_mean": 1.0, "text_mean": 0.1, "auroc": 0.8},
        ],
        "routing": [
            {"rate": 0.9, "precision": 1.0, "recall": 0.9},
            {"rate": 0.1, "precision": 0.0, "recall": float("nan")},
            {"rate": 0.5, "precision": 0.8, "recall": 0.7},
        ],
    }


@pytest.fixture
def runs_dir(tmp_path):
    finals = {
        "seqft": [0.2, 0.25, 0.22],
        "random_gate": [0.3, 0.2, 0.26],
        "vngct": [0.3, 0.33, 0.31],
    }
    for method, values in finals.items():
        for seed, final in zip(SEEDS, values, strict=True):
            write_json(tmp_path / "runs" / method / f"seed{seed}" / "metrics.json",
                       fake_run(method, seed, final))  # fmt: skip
    return tmp_path


def test_swap_shares_skip_tasks_without_visual_items():
    scores = run_scores(fake_run("vngct", 0, 0.3))
    assert scores["projector_forgetting"] == pytest.approx(0.2)
    assert scores["language_forgetting"] == pytest.approx(0.6)


def test_summary_writes_table_claims_and_metrics(runs_dir):
    methods = ["seqft", "random_gate", "vngct"]
    summarize_study(methods, SEEDS, 0.05, 3, runs_dir / "runs", runs_dir / "out")
    table = pd.read_csv(runs_dir / "out/table.csv")
    assert list(table.method) == methods
    assert table.loc[0, "final acc"] == "0.223 ± 0.025"
    assert table.loc[0, "routed: digit"] == "1.000 ± 0.000"
    assert table.loc[2, "routed: mixed"] == "0.500 ± 0.000"
    claims = {c["statement"]: c for c in read_json(runs_dir / "out/claims.json")["claims"]}
    beats_seqft = claims["VNG-CT beats SeqFT on final accuracy"]
    assert beats_seqft["holds"] and beats_seqft["wins"] == "3/3"
    assert not claims["VNG-CT beats the matched random gate on final accuracy"]["holds"]
    assert "VNG-CT beats freezing the visual path on final accuracy" not in claims
    metrics = read_json(runs_dir / "out/metrics.json")
    assert metrics["gate"]["vngct"]["plus"]["rate"]["mean"] == pytest.approx(0.1)
    assert "seqft" not in metrics["gate"]
    assert metrics["held_out_necessity"]["seqft"]["mixed"]["auroc"]["mean"] == pytest.approx(0.8)
    assert metrics["claims_holding"] == f"{sum(c['holds'] for c in claims.values())}/{len(claims)}"
