"""The study's table, claims and metrics from per-run metrics files (core.summary)."""

from __future__ import annotations

import pandas as pd
import pytest

from reprolab.core.io import read_json, write_json
from reprolab.core.schemas import validate_claims
from reprolab.core.summary import summarize_study
from reprolab.studies.vngct.results import run_scores

SEEDS = [0, 1, 2]
TASKS = ["digit", "plus", "mixed"]
METHODS = ["seqft", "random_gate", "vngct"]
PARAMS = {
    "methods": METHODS,
    "claims": {"alpha": 0.05, "min_effect": 0.01, "match_margin": 0.01},
    "table_digits": 3,
}


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
        "accuracy": {"all": [[final, 0.0, 0.0], [final, final, 0.0], [final, final, final]]},
    }


@pytest.fixture
def out_dir(tmp_path):
    """results/vngct stand-in with runs/<method>/seed<k>/metrics.json."""
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


def test_summary_writes_table_claims_metrics_and_curves(out_dir):
    summarize_study("vngct", PARAMS, SEEDS, out_dir)
    table = pd.read_csv(out_dir / "table.csv")
    assert list(table.method) == METHODS
    assert table.loc[0, "final acc"] == "0.223 ± 0.025"
    assert table.loc[0, "routed: digit"] == "1.000 ± 0.000"
    assert table.loc[2, "routed: mixed"] == "0.500 ± 0.000"
    document = read_json(out_dir / "claims.json")
    validate_claims(document, "vngct claims.json")
    claims = {c["statement"]: c for c in document["claims"]}
    assert {c["kind"] for c in claims.values()} == {"paired"}
    # the strongest baseline on final accuracy is the random gate (mean 0.253 > SeqFT's 0.223)
    strongest = claims["VNG-CT beats the strongest baseline (random_gate) on final accuracy"]
    assert strongest["wins"] == "2/3" and not strongest["holds"]
    assert strongest["p_adjusted"] > strongest["p_value"]  # Holm over the 5 paired checks
    assert not claims["VNG-CT beats the matched random gate on final accuracy (control)"]["holds"]
    assert not any("freezing" in statement for statement in claims)  # no freeze_visual runs
    metrics = read_json(out_dir / "metrics.json")
    assert metrics["gate"]["vngct"]["plus"]["rate"]["mean"] == pytest.approx(0.1)
    assert "seqft" not in metrics["gate"]
    assert metrics["held_out_necessity"]["seqft"]["mixed"]["auroc"]["mean"] == pytest.approx(0.8)
    holding = sum(c["holds"] for c in claims.values())
    assert metrics["claims_holding"] == f"{holding}/{len(claims)}"
    curves = pd.read_csv(out_dir / "curves.csv")
    assert set(curves.series) == set(METHODS)
    assert curves[curves.series == "vngct"].y.iloc[-1] == pytest.approx(0.313333, abs=1e-6)


def test_holm_decides_a_claim_that_holds_alone(out_dir):
    """p ≈ 0.037 against the random gate holds alone, not after Holm over the 5 paired checks."""
    for seed, final in zip(SEEDS, [0.28, 0.3, 0.3], strict=True):  # VNG-CT: 0.3, 0.33, 0.31
        write_json(out_dir / "runs/random_gate" / f"seed{seed}" / "metrics.json",
                   fake_run("random_gate", seed, final))  # fmt: skip
    summarize_study("vngct", PARAMS, SEEDS, out_dir)
    check = next(
        c
        for c in read_json(out_dir / "claims.json")["claims"]
        if c["statement"] == "VNG-CT beats the matched random gate on final accuracy (control)"
    )
    assert check["p_value"] < 0.05 and check["holds_unadjusted"]
    assert check["p_adjusted"] >= 0.05 and not check["holds"]


def test_declared_metrics_add_a_final_column_per_task_naming_its_metric(out_dir):
    """Paper scale: runs carry `task_metrics`; each task's final score becomes a column."""
    declared = {"digit": "vqa_accuracy", "plus": "cider", "mixed": "iou"}
    for path in sorted((out_dir / "runs").glob("*/seed*/metrics.json")):
        write_json(path, {**read_json(path), "task_metrics": declared})
    summarize_study("vngct", {**PARAMS, "stream": "coin"}, SEEDS, out_dir)
    table = pd.read_csv(out_dir / "table.csv")
    finals = ["final digit (VQA acc)", "final plus (CIDEr)", "final mixed (IoU≥0.5 acc)"]
    assert list(table.columns) == [
        "method", "final acc", "avg acc", "BWT", "visual forgetting", "text forgetting",
        "projector share", "language share", *finals,
        "routed: digit", "routed: plus", "routed: mixed",
    ]  # fmt: skip
    assert table.loc[0, "final plus (CIDEr)"] == "0.223 ± 0.025"  # SeqFT's last row
    assert "coin stream" in (out_dir / "table.tex").read_text()  # the caption
    metrics = read_json(out_dir / "metrics.json")
    assert metrics["task_metrics"] == declared
    assert metrics["final_task_scores"]["vngct"]["mixed"]["mean"] == pytest.approx(0.94 / 3)


def test_runs_scored_with_different_metrics_are_refused(out_dir):
    path = out_dir / "runs/vngct/seed1/metrics.json"
    write_json(path, {**read_json(path), "task_metrics": {"digit": "iou"}})
    with pytest.raises(ValueError, match=r"vngct seed 1: scored with metrics \{'digit': 'iou'\}"):
        summarize_study("vngct", PARAMS, SEEDS, out_dir)
