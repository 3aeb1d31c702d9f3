"""Table and claims from run files: the gap claim, the oracle and chance checks can each fail."""

from __future__ import annotations

import pandas as pd
import pytest

from reprolab.core.io import read_json, write_json
from reprolab.core.schemas import validate_claims
from reprolab.core.summary import summarize_study
from reprolab.studies.visual_queries.items import FAMILIES
from reprolab.studies.visual_queries.jobs import METHODS
from reprolab.studies.visual_queries.results import CLAIM_MODELS, LABELS, MODES, load_runs
from tests.conftest import study_section

SEEDS = [0, 1, 2, 3]


def _params(methods, min_effect: float = 0.0) -> dict:
    return {
        "methods": list(methods),
        "claims": {"alpha": 0.05, "min_effect": min_effect},
        "table_digits": 1,
    }


def _write_runs(root, values, spread, real=()):
    """values: method -> (text, visual) accuracy; `spread` adds seed-to-seed variation; each
    dataset of `real` gets the same cells (paper scale: `<dataset>_<family>_acc_<mode>`)."""
    for method, (text, visual) in values.items():
        for seed in SEEDS:
            metrics = {"method": method, "seed": seed, "n_test": 900, "loss": {"tune": 1.0}}
            for prefix in ("", *(f"{dataset}_" for dataset in real)):
                for family in FAMILIES:
                    metrics[f"{prefix}{family}_acc_text"] = text + spread * seed
                    metrics[f"{prefix}{family}_acc_visual"] = visual + spread * (seed % 2)
            write_json(root / method / f"seed{seed}" / "metrics.json", metrics)


def _document(tmp_path, values, spread=1.0, min_effect=0.0) -> dict:
    _write_runs(tmp_path / "runs", values, spread)
    summarize_study("visual_queries", _params(values, min_effect), SEEDS, tmp_path)
    document = read_json(tmp_path / "claims.json")
    validate_claims(document, "visual_queries claims.json")
    return document


def _claims(tmp_path, values, spread=1.0, min_effect=0.0):
    return {c["statement"]: c for c in _document(tmp_path, values, spread, min_effect)["claims"]}


def test_table_has_text_visual_and_gap_per_family(tmp_path):
    _claims(tmp_path, {"oracle": (100, 100), "tinyvlm": (60, 40)})
    table = pd.read_csv(tmp_path / "table.csv")
    assert list(table["method"]) == [LABELS["oracle"], LABELS["tinyvlm"]]
    assert list(table.columns[1:4]) == ["TFR: text", "TFR: visual", "TFR: Δ"]
    assert table.loc[1, "TFR: Δ"].startswith("21.0 ±")
    curves = (tmp_path / "curves.csv").read_text().splitlines()
    # seed means: text 100 + (0+1+2+3)/4, visual 100 + (0+1+0+1)/4
    assert curves[:3] == ["x,series,y", "0,cmd/oracle,101.500000", "1,cmd/oracle,100.500000"]


def test_gap_claim_holds_and_fails_with_the_numbers(tmp_path):
    claims = _claims(tmp_path, {"tinyvlm": (60, 40), "caption_reason": (30, 45)})
    gap = [c for s, c in claims.items() if s.startswith(LABELS["tinyvlm"])]
    assert len(gap) == 3 and all(c["holds"] and c["kind"] == "paired" for c in gap)
    assert gap[0]["methods"] == ["tinyvlm:text", "tinyvlm:visual"]
    reverse = [c for s, c in claims.items() if s.startswith(LABELS["caption_reason"])]
    assert not any(c["holds"] for c in reverse)


def test_a_gap_below_the_minimum_effect_does_not_hold(tmp_path):
    # text − visual = 3.5, 2.5, 4.5, 3.5 points: p < 0.01 on every family, but the mean 3.5 is
    # below a minimum effect of 5 points
    claims = _claims(tmp_path, {"tinyvlm": (43, 40)}, spread=1.0, min_effect=5.0)
    gap = list(claims.values())
    assert len(gap) == 3 and all(c["kind"] == "paired" for c in gap)
    assert all(c["rule"]["min_effect"] == 5.0 and c["p_value"] < 0.01 for c in gap)
    assert not any(c["holds"] for c in gap)
    assert "> 5 over seeds" in gap[0]["rule"]["text"]
    held = _claims(tmp_path / "low", {"tinyvlm": (43, 40)}, spread=1.0, min_effect=2.0)
    assert all(c["holds"] for c in held.values())


def test_holm_correction_over_the_paired_checks(tmp_path):
    # text − visual = 3, 1, 3, 1 on every family: raw p ≈ 0.020 < 0.05 for each of the three
    # checks, but Holm-adjusted ≈ 0.061 (3 × p for the first of the tied three): none holds
    _write_runs(tmp_path / "runs", {"tinyvlm": (41, 40)}, spread=0)
    for run in (tmp_path / "runs/tinyvlm").glob("seed*/metrics.json"):
        metrics = read_json(run)
        if metrics["seed"] % 2 == 0:
            write_json(run, {k: v + 2 if "_acc_text" in k else v for k, v in metrics.items()})
    summarize_study("visual_queries", _params(["tinyvlm"]), SEEDS, tmp_path)
    document = read_json(tmp_path / "claims.json")
    checks = document["claims"]
    assert [c["holds_unadjusted"] for c in checks] == [True] * 3
    assert [c["holds"] for c in checks] == [False] * 3
    assert checks[0]["p_value"] < 0.05 < checks[0]["p_adjusted"]
    assert (document["claims_holding"], document["claims_counted"]) == (0, 3)


def test_benchmark_checks_fail_when_the_benchmark_is_broken(tmp_path):
    claims = _claims(tmp_path, {"oracle": (100, 99), "blind": (25, 40)}, spread=0)
    oracle = next(c for c in claims.values() if c["kind"] == "sanity")
    assert "oracle" in oracle["statement"] and "not the images" in oracle["statement"]
    blind = next(c for s, c in claims.items() if "chance" in s)
    assert not oracle["holds"] and not blind["holds"]
    assert oracle["kind"] == "sanity" and blind["kind"] == "tolerance"
    assert oracle["details"]["per_seed"]["tfr_visual"] == [99.0] * len(SEEDS)
    # one named value per family and mode, within chance ± 3σ of the pooled items
    assert sorted(blind["values"]) == sorted(f"{f}_{m}" for f in FAMILIES for m in MODES)
    assert blind["values"]["tfr_visual"] == 40.0 and blind["rule"]["target"] == 25.0
    assert blind["rule"]["tolerance"] == pytest.approx(3 * 100 * (0.25 * 0.75 / 1200) ** 0.5)
    good = _document(tmp_path / "good", {"oracle": (100, 100), "blind": (24, 24)}, spread=0)
    assert all(c["holds"] for c in good["claims"])
    # the oracle's sanity check is shown but not counted
    assert (good["claims_holding"], good["claims_counted"]) == (1, 1)


def test_missing_accuracy_is_named(tmp_path):
    write_json(tmp_path / "runs/oracle/seed0/metrics.json", {"tfr_acc_text": 1})
    with pytest.raises(ValueError, match="lack"):
        load_runs(_params(["oracle"]), [0], tmp_path / "runs")


def test_metrics_keep_nested_diagnostics_flat(tmp_path):
    _claims(tmp_path, {"tinyvlm": (60, 40)})
    metrics = read_json(tmp_path / "metrics.json")
    methods = metrics["methods"]["tinyvlm"]
    assert methods["loss.tune"]["mean"] == 1.0 and "seed" not in methods
    assert methods["tfr_acc_text"]["per_seed"] == [60, 61, 62, 63]
    assert metrics["claims_holding"] == "3/3"


def test_every_method_has_a_label_and_hf_vlm_a_claim(tmp_path):
    """A summary with the paper-scale method list (hf_vlm included) builds table and claims."""
    params = study_section("visual_queries", "paper")
    assert "hf_vlm" in params["methods"] and set(METHODS) <= set(LABELS)
    values = {m: (100, 100) if m == "oracle" else (25, 25) for m in params["methods"]}
    values.update({m: (60, 40) for m in CLAIM_MODELS})
    real = list(params["real_items"])
    _write_runs(tmp_path / "runs", values, spread=1.0, real=real)
    summarize_study("visual_queries", params, SEEDS, tmp_path)
    document = read_json(tmp_path / "claims.json")
    validate_claims(document, "visual_queries claims.json")
    table = pd.read_csv(tmp_path / "table.csv")
    assert list(table["method"]) == [LABELS[m] for m in params["methods"]]
    assert "CLEVRER TFR: visual" in table.columns and "SSV2 VFP: text" in table.columns
    hf = [c for c in document["claims"] if c.get("methods") == ["hf_vlm:text", "hf_vlm:visual"]]
    assert len(hf) == len(FAMILIES) and all(c["holds"] for c in hf)
    assert all(c["rule"]["min_effect"] == params["claims"]["min_effect"] for c in hf)
    paired = [c for c in document["claims"] if c["kind"] == "paired"]
    # the sprite items' and, where both modes are finite, each real dataset's
    assert len(paired) == (1 + len(real)) * len(CLAIM_MODELS) * len(FAMILIES)
