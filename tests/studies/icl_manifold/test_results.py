"""Table, slopes and claims from constructed per-prompt errors with planted power laws,
through the shared summary (core.summary)."""

from __future__ import annotations

import numpy as np
import pytest

from reprolab.core.io import read_json, write_h5, write_json
from reprolab.core.schemas import validate_claims
from reprolab.core.summary import summarize_study
from reprolab.studies.icl_manifold.results import rate_axis

SLOPE = {
    "oracle_lp": -0.85,
    "twostage_tf": -0.85,
    "twostage_exact": -0.85,
    "lintf": 0.0,
    "knn": -0.6,
    "nw": -0.5,
    "ambient_ll": -0.7,
}
LEVEL = {
    "oracle_lp": 1.0,
    "twostage_tf": 1.05,
    "twostage_exact": 1.02,
    "lintf": 3.0,
    "knn": 1.5,
    "nw": 1.6,
    "ambient_ll": 1.4,
}


def write_runs(params, root, seeds):
    """root/out/runs/seed<k>/{errors.h5,training.json} and root/data/icl_manifold/tuning."""
    rng = np.random.default_rng(0)
    sizes = np.asarray(params["sizes"], dtype=float)
    methods = params["methods"]
    for seed in seeds:
        arrays = {}
        for setting in params["settings"]:
            x = rate_axis(params, setting)
            tilt = -0.1 if setting == "circles" else 0.0  # circles steeper
            base = np.stack([LEVEL[m] * (x / x[0]) ** (SLOPE[m] + tilt) for m in methods])
            noise = rng.exponential(1.0, (len(methods), sizes.size, 40))
            arrays[setting] = base[..., None] * (0.9 + 0.2 * noise / noise.mean())
        write_h5(
            root / "out/runs" / f"seed{seed}" / "errors.h5",
            arrays,
            attrs={"methods": methods, "sizes": sizes.astype(np.int64), "seed": seed},
        )
        optimiser = {"steps": 3, "batch": 16, "clip": 1.0, "lr": 0.01}
        summary = {
            m: {"first_loss": 2.0, "last_loss": 1.0, "parameters": 10, "optimiser": optimiser}
            for m in ("twostage_tf", "lintf")
        }
        write_json(root / "out/runs" / f"seed{seed}" / "training.json", summary)
    for setting in params["settings"]:
        tuned = {"knn": [4] * sizes.size, "tuning_mse": [1.0] * sizes.size}
        write_json(root / "data/icl_manifold/tuning" / f"{setting}.json", tuned)


@pytest.fixture
def in_tmp(tmp_path, monkeypatch):
    """Work in tmp_path, where the summary finds data/icl_manifold/tuning."""
    monkeypatch.chdir(tmp_path)
    return tmp_path


def summary(params, seeds, root) -> dict[str, list[dict]]:
    """Summarize root/out; the claims (schema-checked) grouped by their number."""
    summarize_study("icl_manifold", params, seeds, root / "out")
    document = read_json(root / "out/claims.json")
    validate_claims(document, "icl_manifold claims.json")
    by_number: dict[str, list[dict]] = {}
    for check in document["claims"]:
        by_number.setdefault(check["statement"].split(".")[0], []).append(check)
    return by_number


def test_planted_rates_give_the_planted_claims(ci_params, in_tmp):
    params = {**ci_params, "sizes": [32, 64, 128, 256, 512]}
    seeds = [0, 1, 2, 3]
    write_runs(params, in_tmp, seeds)
    by_number = summary(params, seeds, in_tmp)
    # theory: -6/7 circles, -0.75 otherwise; planted -0.95 / -0.85 (growing axis n/J differs)
    slopes = by_number["1"]
    assert {c["kind"] for c in slopes} == {"tolerance"}
    assert [c["holds"] for c in slopes][:3] == [True, True, True]
    assert slopes[1]["rule"]["target"] == -0.75 and len(slopes[1]["details"]["per_seed"]) == 4
    assert by_number["2"][0]["kind"] == "paired" and by_number["2"][0]["holds"]  # circles steeper
    gap = by_number["3"][0]
    assert gap["kind"] == "bound" and gap["holds"]  # +5 % < 20 %
    assert list(gap["values"]) == ["n=128", "n=256", "n=32", "n=512", "n=64"]  # sorted JSON keys
    assert all(c["holds"] and c["p_adjusted"] >= c["p_value"] for c in by_number["4"])
    assert all(c["holds"] for c in by_number["5"])
    assert by_number["6"][0]["holds"]  # kNN -0.6 vs -0.85
    metrics = read_json(in_tmp / "out/metrics.json")
    fit = metrics["settings"]["spheres"]["methods"]["knn"]["slope"]["pooled"]
    assert abs(fit["slope"] + 0.6) < 0.05 and fit["ci_low"] < -0.6 < fit["ci_high"]
    assert metrics["tuned"]["mixture"] == {"knn": [4] * 5}  # tuning_mse left out
    assert metrics["training"]["lintf"]["last_loss"]["mean"] == 1.0
    assert metrics["training"]["lintf"]["optimiser"]["lr"] == 0.01
    assert (
        metrics["claims_holding"] == f"{sum(c['holds'] for g in by_number.values() for c in g)}/11"
    )
    assert "| lintf |" in (in_tmp / "out/table.md").read_text()
    curves = (in_tmp / "out/curves.csv").read_text().splitlines()
    assert curves[0] == "x,series,y" and len(curves) == 1 + 4 * 7 * 5


def test_paired_claims_carry_their_minimum_effects(ci_params, in_tmp):
    params = {**ci_params, "sizes": [32, 64, 128, 256, 512]}
    write_runs(params, in_tmp, [0, 1, 2])
    by_number = summary(params, [0, 1, 2], in_tmp)
    mse_effect = params["claims"]["min_effect"]
    slope_effect = mse_effect / np.log(512 / 32)  # the same log-MSE change over the n grid
    for number, effect in (("2", slope_effect), ("4", mse_effect), ("5", mse_effect)):
        for check in by_number[number]:
            assert check["rule"]["min_effect"] == pytest.approx(effect)
    assert by_number["6"][0]["rule"]["min_effect"] == pytest.approx(slope_effect)
    lintf = by_number["4"][0]
    assert lintf["metric"] == "mixture: log MSE n=512"
    planted = np.log(1.05 / 3.0) + SLOPE["twostage_tf"] * np.log(512 / 32)  # log MSE ratio
    assert lintf["mean_difference"] == pytest.approx(planted, abs=0.1) and lintf["holds"]


def test_a_consistent_but_small_win_does_not_count(ci_params, in_tmp):
    """kNN 5 % worse than the two-stage network on every seed: significant, but a log MSE
    ratio of 0.05 is below the minimum effect of 0.1, so claim 5 against kNN fails."""
    params = {**ci_params, "sizes": [32, 64, 128, 256, 512]}
    saved = dict(LEVEL), dict(SLOPE)
    LEVEL["knn"], SLOPE["knn"] = 1.05 * LEVEL["twostage_tf"], SLOPE["twostage_tf"]
    try:
        write_runs(params, in_tmp, [0, 1, 2, 3, 4])
    finally:
        LEVEL.update(saved[0])
        SLOPE.update(saved[1])
    knn = next(c for c in summary(params, [0, 1, 2, 3, 4], in_tmp)["5"] if "knn" in c["methods"])
    assert knn["p_value"] < 0.05 and -knn["mean_difference"] < params["claims"]["min_effect"]
    assert not knn["holds"]


def test_a_failing_claim_is_reported_failing(ci_params, in_tmp):
    params = {**ci_params, "sizes": [32, 64, 128, 256, 512]}
    saved = dict(LEVEL)
    LEVEL["twostage_tf"] = 2.0  # 100 % above the oracle
    try:
        write_runs(params, in_tmp, [0, 1, 2])
    finally:
        LEVEL.update(saved)
    gap = summary(params, [0, 1, 2], in_tmp)["3"][0]
    assert not gap["holds"] and min(gap["values"].values()) > 0.9


def test_the_summary_needs_the_tuning_files(ci_params, in_tmp):
    params = {**ci_params, "sizes": [32, 64, 128, 256, 512]}
    write_runs(params, in_tmp, [0, 1])
    (in_tmp / "data/icl_manifold/tuning/mixture.json").unlink()
    with pytest.raises(FileNotFoundError, match="mixture.json"):
        summarize_study("icl_manifold", params, [0, 1], in_tmp / "out")
