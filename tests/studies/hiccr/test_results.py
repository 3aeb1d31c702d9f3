"""The hiccr table, claims, metrics and curves from constructed run files (the shapes
jobs.warm_start and jobs.run_seed write): each claim's direction and failure mode, the overhead
bound, the sanity checks, and a whole summary through the shared template."""

from __future__ import annotations

import copy
from pathlib import Path

import numpy as np
import pytest

from reprolab.core.io import read_json, write_h5, write_json
from reprolab.core.summary import summarize_study
from reprolab.studies.hiccr.results import (
    MEASURES,
    NAMES,
    OVERHEAD,
    WARM_START,
    claim_checks,
    curve_rows,
    load_runs,
    study_metrics,
    table,
)
from reprolab.studies.hiccr.workflow_io import check_params, tuned_bases

SEEDS = [0, 1, 2, 3]
METHODS = ["grpo", "random", "token", "trajectory", "hiccr", "drgrpo", "drgrpo_hiccr"]
PARAMS = {
    "methods": METHODS,
    "sft": {"gate": {"accuracy": [0.4, 0.8], "min_dependence": 0.1}},
    "claims": {"alpha": 0.05, "min_effect": 0.0, "max_overhead": 0.03},
    "table_digits": 3,
}
"""The parts of the hiccr section the summary reads."""

WARM = {"accuracy": 0.55, "attention": 0.50, "gradient_share": 0.12, "dependence": 0.45}
ACCURACY = {
    "grpo": 0.60,
    "random": 0.63,
    "token": 0.61,
    "trajectory": 0.60,
    "hiccr": 0.66,
    "drgrpo": 0.59,
    "drgrpo_hiccr": 0.64,
}
OVERHEADS = {"grpo": 1.0, "drgrpo": 1.0, "random": 1.001, "hiccr": 1.002, "drgrpo_hiccr": 1.002}


def write_runs(root: Path, accuracy=ACCURACY, overheads=OVERHEADS, reduces=True) -> Path:
    """Run files under root/runs: GRPO loses grounding from the warm start, HiCCR less."""
    runs = root / "runs"
    warm_start = {
        "steps": 400,
        "corrupted_digits": 0.27,
        "gate": {**WARM, "blind_accuracy": 0.1, "sampled_accuracy": 0.2},
        "test": {**WARM, "blind_accuracy": 0.1},
    }
    for method in METHODS:
        for seed in SEEDS:
            wobble = 0.004 * ((seed * 7 + len(method)) % 3 - 1)
            loss = 0.05 if method in ("grpo", "drgrpo", "random", "trajectory") else 0.01
            test = {
                "accuracy": accuracy[method] + wobble,
                "blind_accuracy": 0.1,
                "attention": WARM["attention"] - loss + wobble,
                "gradient_share": WARM["gradient_share"] - loss / 5 + wobble / 5,
                "dependence": WARM["dependence"] - loss + wobble,
            }
            folder = runs / method / f"seed{seed}"
            write_json(
                folder / "metrics.json",
                {
                    "method": method,
                    "seed": seed,
                    "lr": 3e-5,
                    "test": test,
                    "mean_reward": 0.3,
                    "first_batch": {
                        "reward": 0.2,
                        "operations": 1000,
                        "base_operations": 1000,
                        "operations_ratio": overheads.get(method, 1.001),
                        "reduces_to_base": reduces,
                    },
                    "warm_start": warm_start,
                },
            )
            steps = np.array([0, 10, 20])
            write_h5(
                folder / "curves.h5",
                {
                    "step": steps,
                    **{k: np.array([WARM[k], test[k], test[k]]) for k in WARM},
                    "blind_accuracy": np.full(3, 0.1),
                    "reward": np.linspace(0.2, 0.4, 20),
                },
            )
    return runs


def checks_by_statement(checks: list[dict]) -> dict[str, dict]:
    return {c["statement"]: c for c in checks}


def test_table_has_the_warm_start_then_every_method_and_no_overhead_for_the_warm_start(tmp_path):
    runs = load_runs(PARAMS, SEEDS, write_runs(tmp_path))
    found = table(PARAMS, runs, SEEDS)
    assert found.methods == [NAMES[WARM_START], *(NAMES[m] for m in METHODS)]
    assert found.columns == [*MEASURES.values(), OVERHEAD]
    assert (NAMES[WARM_START], OVERHEAD) in found.not_applicable
    warm = [r.value for r in found.records if r.method == NAMES[WARM_START]]
    assert warm.count(WARM["accuracy"]) == len(SEEDS)
    hiccr = [r.value for r in found.records if r.method == NAMES["hiccr"] and r.column == OVERHEAD]
    assert hiccr == pytest.approx([0.2] * len(SEEDS))


def test_claims_follow_the_runs_and_fail_when_the_data_say_so(tmp_path):
    runs = load_runs(PARAMS, SEEDS, write_runs(tmp_path))
    checks = claim_checks(PARAMS, runs, SEEDS)
    counted = [c for c in checks if c["kind"] != "sanity"]
    assert all(c["holds"] for c in counted), [c["statement"] for c in counted if not c["holds"]]
    assert sum(c["kind"] == "sanity" for c in checks) == 2
    grounding = [c for c in counted if "weakens" in c["statement"]]
    assert [c["methods"] for c in grounding] == [["grpo", WARM_START]] * 3

    worse = dict(ACCURACY, hiccr=0.55, random=0.58)
    costly = dict(OVERHEADS, drgrpo_hiccr=1.05)
    runs = load_runs(PARAMS, SEEDS, write_runs(tmp_path / "b", worse, costly, reduces=False))
    found = checks_by_statement(claim_checks(PARAMS, runs, SEEDS))
    failing = {s for s, c in found.items() if not c["holds"]}
    assert any(s.startswith("Even random") for s in failing)
    assert any("(HiCCR (GRPO + both) over" in s for s in failing)
    assert any(s.startswith("HiCCR adds little") for s in failing)
    assert any(s.startswith("With constant credit weights") for s in failing)
    assert not any("(Dr. GRPO + HiCCR over" in s for s in failing)


def test_runs_from_different_warm_starts_are_refused(tmp_path):
    runs = write_runs(tmp_path)
    path = runs / "hiccr" / "seed1" / "metrics.json"
    metrics = read_json(path)
    metrics["warm_start"]["steps"] = 300
    write_json(path, metrics)
    with pytest.raises(ValueError, match="different warm starts"):
        load_runs(PARAMS, SEEDS, runs)


def test_metrics_and_curves(tmp_path):
    runs = load_runs(PARAMS, SEEDS, write_runs(tmp_path))
    metrics = study_metrics(PARAMS, runs, SEEDS)
    assert len(metrics["rows"]["hiccr"]["accuracy"]["per_seed"]) == len(SEEDS)
    assert metrics["warm_start"]["gate"]["sampled_accuracy"] == 0.2
    curves = curve_rows(PARAMS, runs, SEEDS)
    assert set(curves["series"]) == {f"{m}_{k}" for m in METHODS for k in WARM}
    first = curves[(curves["series"] == "grpo_accuracy") & (curves["x"] == 0)]
    assert float(first["y"].iloc[0]) == WARM["accuracy"]


def test_a_whole_summary_writes_every_contract_file(tmp_path):
    write_runs(tmp_path)
    summarize_study("hiccr", PARAMS, SEEDS, out_dir=tmp_path)
    claims = read_json(tmp_path / "claims.json")
    assert claims["claims_counted"] == 8 and claims["claims_holding"] == 8
    assert (tmp_path / "table.md").read_text().count("|") > 20


def test_params_checks_name_the_key():
    params = {
        "stream": "visarith",
        "methods": METHODS,
        "sft": {"gate": {"accuracy": [0.4, 0.8], "min_dependence": 0.1}},
        "credit": {"token_clip": [0.2, 3.0], "trajectory_clip": [0.5, 2.0]},
        "tune": {"grid": {"grpo": {"lr": [1e-5, 3e-5]}, "drgrpo": {"lr": [1e-5, 3e-5]}}},
    }
    streams = {"visarith": {}}
    check_params(params, streams)
    assert tuned_bases(params) == ["grpo", "drgrpo"]
    cases = [
        (("stream",), "coin", "hiccr.stream"),
        (("tune", "grid", "drgrpo", "lr"), [1e-5], "hiccr.tune.grid"),
        (("sft", "gate", "accuracy"), [0.8, 0.4], "hiccr.sft.gate.accuracy"),
        (("credit", "token_clip"), [1.5, 3.0], "hiccr.credit.token_clip"),
    ]
    for path, value, key in cases:
        bad = copy.deepcopy(params)
        target = bad
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = value
        with pytest.raises(ValueError, match=key):
            check_params(bad, streams)
    both = {**params, "benchmarks": {"train": "t.parquet"}}
    neither = {k: v for k, v in params.items() if k != "stream"}
    for bad in (both, neither):
        with pytest.raises(ValueError, match="exactly one of `stream`"):
            check_params(bad, streams)
    check_params({**neither, "benchmarks": {"train": "t.parquet"}}, streams)
