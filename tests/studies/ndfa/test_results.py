"""The ndfa summary (table, claims, metrics, curves) from constructed run files."""

from pathlib import Path

import numpy as np
import pytest

from reprolab.core.io import read_json, write_h5, write_json
from reprolab.core.schemas import validate_claims
from reprolab.core.summary import summarize_study
from reprolab.studies.ndfa.results import claim_checks, gap_check, gap_closed

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
        "claims": {"alpha": 0.05, "min_effect": 1.0, "min_effect_alignment": 0.05},
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
    assert [c["kind"] for c in claims] == ["paired", "bound", "paired", "paired"]
    # a constant positive alignment difference counts as significant (zero-variance case)
    assert [c["holds"] for c in claims] == [True, True, True, True]
    paired = [c for c in claims if c["kind"] == "paired"]
    assert [c["methods"] for c in paired] == [["ndfa", "dfa"]] * 2 + [["ndfa", "linfa"]]
    assert [c["rule"]["min_effect"] for c in paired] == [1.0, 0.05, 1.0]
    # NDFA - DFA = 10, 11, 12 pp (sd 1) of a BP - DFA gap of 15, 15, 18 pp
    gap = claims[1]["details"]
    assert gap["gap_closed_fraction"] == pytest.approx(11 / 16)
    assert claims[1]["values"] == {"mean(ndfa − dfa) − max(2 sd, min effect)": pytest.approx(9)}
    assert (document["claims_holding"], document["claims_counted"]) == (4, 4)
    metrics = read_json(tmp_path / "metrics.json")
    assert metrics["toy"]["dfa"]["test_accuracy"]["per_seed"] == [0.8, 0.81, 0.79]
    assert metrics["gap_closed"]["toy"]["fraction"] == pytest.approx(11 / 16)
    assert metrics["gap_closed"]["toy"]["ndfa_minus_dfa_pp"]["mean"] == pytest.approx(11)
    assert metrics["claims_holding"] == "4/4"
    curves = (tmp_path / "curves.csv").read_text().splitlines()
    assert curves[0] == "x,series,y"
    assert "2,toy/ndfa,91.000000" in curves and "1,toy/ndfa,45.500000" in curves


def test_holm_correction_decides_borderline_accuracy_claims(tmp_path: Path):
    # NDFA - DFA = NDFA - LinFA = 1, 3.2, 2 pp: raw one-sided p ≈ 0.04 for claims 1 and 4 (the
    # same differences); Holm over the three paired checks multiplies the smaller of the two
    # tied p-values by 2 and keeps the larger at least as large, so neither holds.
    accuracy = {**ACCURACY, "ndfa": [0.81, 0.842, 0.81], "linfa": [0.80, 0.81, 0.79]}
    write_runs(tmp_path / "runs", accuracy, ALIGNMENT)
    summarize_study("ndfa", params(), SEEDS, tmp_path)
    claims = read_json(tmp_path / "claims.json")["claims"]
    first, gap, align, ablation = claims
    assert first["p_value"] == pytest.approx(ablation["p_value"])
    assert 0.025 < first["p_value"] < 0.05
    assert first["holds_unadjusted"] and ablation["holds_unadjusted"]
    assert not first["holds"] and not ablation["holds"]
    assert first["p_adjusted"] == pytest.approx(2 * first["p_value"])
    assert align["holds"]
    # mean 2.07 pp < 2 sd = 2.20 pp: the card's rule fails although the t-test alone would pass
    assert gap["kind"] == "bound" and not gap["holds"]
    assert read_json(tmp_path / "metrics.json")["claims_holding"] == "1/4"


def runs_of(accuracy: dict[str, list[float]]) -> dict:
    """load_runs's layout for one task `toy`, accuracies as fractions."""
    return {
        "metrics": {
            "toy": {
                m: [{"test_accuracy": a, "mean_alignment": 0.5 + 0.01 * i} for i, a in enumerate(v)]
                for m, v in accuracy.items()
            }
        }
    }


def test_gap_claim_is_the_two_sd_rule_with_the_minimum_effect():
    bp = [0.9, 0.9, 0.9]
    dfa = [0.7, 0.8, 0.75]
    # a consistent gain of 5 pp on every seed: sd 0, so the minimum effect is the threshold
    check = gap_check(runs_of({"bp": bp, "dfa": dfa, "ndfa": [0.75, 0.85, 0.8]}), "toy", SEEDS, 1.0)
    assert check["kind"] == "bound" and check["holds"]
    assert check["details"]["std_difference"] == pytest.approx(0, abs=1e-9)
    assert list(check["values"].values()) == [pytest.approx(4.0)]
    # NDFA closes a third of the 15 pp gap to BP
    assert check["details"]["gap_closed_fraction"] == pytest.approx(5 / 15)
    # identical to DFA: 0 - max(0, 1) < 0, the claim fails (without the minimum it would hold)
    same = gap_check(runs_of({"bp": bp, "dfa": dfa, "ndfa": dfa}), "toy", SEEDS, 1.0)
    assert not same["holds"]
    assert same["details"]["gap_closed_fraction"] == pytest.approx(0)
    # a gain of 2, 8, 5 pp: mean 5 < 2 sd = 6, so the gain is not consistent enough
    noisy = gap_check(runs_of({"bp": bp, "dfa": dfa, "ndfa": [0.72, 0.88, 0.8]}), "toy", SEEDS, 1.0)
    assert not noisy["holds"]
    assert noisy["details"]["two_sd"] == pytest.approx(6.0)


def test_gap_closed_fraction_needs_a_gap():
    closed = gap_closed(runs_of({"bp": [0.7, 0.8], "dfa": [0.75, 0.8], "ndfa": [0.9, 0.9]}), "toy")
    assert closed["fraction"] is None  # BP does not beat DFA on average
    reached = gap_closed(runs_of({"bp": [0.9, 0.8], "dfa": [0.7, 0.6], "ndfa": [0.9, 0.8]}), "toy")
    assert reached["fraction"] == pytest.approx(1.0)


def test_minimum_effect_blocks_a_consistent_but_tiny_paired_gain():
    # NDFA beats DFA and LinFA by 0.5 pp on every seed: p = 0 (no spread), but 0.5 < 1 pp
    acc = {
        "bp": [0.9, 0.9, 0.9],
        "dfa": [0.70, 0.71, 0.72],
        "linfa": [0.70, 0.71, 0.72],
        "ndfa": [0.705, 0.715, 0.725],
    }
    checks = claim_checks(params(), runs_of(acc), SEEDS)
    first, ablation = checks[0], checks[3]
    assert first["p_value"] < 1e-6 and not first["holds_unadjusted"]
    assert not ablation["holds_unadjusted"]
    assert first["rule"]["text"].startswith("mean of ndfa − dfa > 1 over seeds")
