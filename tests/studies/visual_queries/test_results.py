"""Table and claims from run files: the gap claim, the oracle and chance checks can each fail."""

from __future__ import annotations

import pandas as pd
import pytest

from reprolab.core.io import read_json, write_json
from reprolab.studies.visual_queries.items import FAMILIES
from reprolab.studies.visual_queries.results import LABELS, summarize_study

SEEDS = [0, 1, 2, 3]


def _write_runs(root, values, spread):
    """values: method -> (text, visual) accuracy; `spread` adds seed-to-seed variation."""
    for method, (text, visual) in values.items():
        for seed in SEEDS:
            metrics = {"method": method, "seed": seed, "n_test": 900, "loss": {"tune": 1.0}}
            for family in FAMILIES:
                metrics[f"{family}_acc_text"] = text + spread * seed
                metrics[f"{family}_acc_visual"] = visual + spread * (seed % 2)
            write_json(root / method / f"seed{seed}" / "metrics.json", metrics)


def _claims(tmp_path, values, spread=1.0):
    _write_runs(tmp_path / "runs", values, spread)
    summarize_study(list(values), SEEDS, 0.05, 1, tmp_path / "runs", tmp_path)
    return {c["statement"]: c for c in read_json(tmp_path / "claims.json")["claims"]}


def test_table_has_text_visual_and_gap_per_family(tmp_path):
    _claims(tmp_path, {"oracle": (100, 100), "tinyvlm": (60, 40)})
    table = pd.read_csv(tmp_path / "table.csv")
    assert list(table["method"]) == [LABELS["oracle"], LABELS["tinyvlm"]]
    assert list(table.columns[1:4]) == ["TFR: text", "TFR: visual", "TFR: Δ"]
    assert table.loc[1, "TFR: Δ"].startswith("21.0 ±")


def test_gap_claim_holds_and_fails_with_the_numbers(tmp_path):
    claims = _claims(tmp_path, {"tinyvlm": (60, 40), "caption_reason": (30, 45)})
    gap = [c for s, c in claims.items() if s.startswith(LABELS["tinyvlm"])]
    assert len(gap) == 3 and all(c["holds"] for c in gap)
    reverse = [c for s, c in claims.items() if s.startswith(LABELS["caption_reason"])]
    assert not any(c["holds"] for c in reverse)


def test_benchmark_checks_fail_when_the_benchmark_is_broken(tmp_path):
    claims = _claims(tmp_path, {"oracle": (100, 99), "blind": (25, 40)}, spread=0)
    oracle = next(c for s, c in claims.items() if "oracle" in s)
    blind = next(c for s, c in claims.items() if "chance" in s)
    assert not oracle["holds"] and not blind["holds"]
    good = _claims(tmp_path / "good", {"oracle": (100, 100), "blind": (24, 24)}, spread=0)
    assert all(c["holds"] for s, c in good.items() if "oracle" in s or "chance" in s)


def test_missing_accuracy_is_named(tmp_path):
    write_json(tmp_path / "runs/oracle/seed0/metrics.json", {"tfr_acc_text": 1})
    with pytest.raises(ValueError, match="lack"):
        summarize_study(["oracle"], [0], 0.05, 1, tmp_path / "runs", tmp_path)


def test_metrics_keep_nested_diagnostics_flat(tmp_path):
    _claims(tmp_path, {"tinyvlm": (60, 40)})
    metrics = read_json(tmp_path / "metrics.json")["methods"]["tinyvlm"]
    assert metrics["loss.tune"]["mean"] == 1.0 and "seed" not in metrics
    assert metrics["tfr_acc_text"]["per_seed"] == [60, 61, 62, 63]
