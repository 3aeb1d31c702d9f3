"""The table, claims, metrics and curves of ngpt_fp4 from planted run files: the paired gaps,
the slopes of SNR in log2 d, and each claim holding or failing as the planted numbers say."""

from __future__ import annotations

import numpy as np
import pytest

from reprolab.core.claims import holm_adjust
from reprolab.core.io import write_json
from reprolab.core.summary import results_module
from reprolab.core.tables import summarize
from reprolab.studies.ngpt_fp4 import results
from reprolab.studies.ngpt_fp4.results import (
    DELTA,
    gaps,
    load_runs,
    mechanism_path,
    run_path,
    snr_slopes,
)

SEEDS = [0, 1, 2]
HIDDENS = [32, 64, 128]
PARAMS = {
    "architectures": ["gpt", "ngpt"],
    "recipes": ["fp32", "nvfp4", "nvfp4_rht_sr", "nvfp4_static"],
    "train": {"steps": 10, "log_every": 4},
    "claims": {
        "alpha": 0.05,
        "min_effect": 0.01,
        "margin": 0.02,
        "noise_tolerance": 0.02,
        "min_rho_effect": 0.01,
        "min_slope_effect": 0.2,
    },
}
# Planted: per recipe the gap to fp32 (GPT needs the Hadamard/SR recipe, nGPT does not), the
# SNR slope per doubling and the product correlation per architecture.
GAPS = {
    "gpt": {"fp32": 0.0, "nvfp4": 0.10, "nvfp4_rht_sr": 0.04, "nvfp4_static": 0.5},
    "ngpt": {"fp32": 0.0, "nvfp4": 0.03, "nvfp4_rht_sr": 0.025, "nvfp4_static": 0.6},
}
SLOPES, RHO = {"gpt": 0.5, "ngpt": 2.0}, {"gpt": 0.01, "ngpt": 0.1}


def write_runs(folder, gaps=GAPS, slopes=SLOPES, rho=RHO, noise=0.001):
    for a, arch in enumerate(PARAMS["architectures"]):
        for seed in SEEDS:
            noise_draws = np.random.default_rng(10 * seed + a).normal(0.0, 0.002, size=4)
            base = 1.8 + 0.05 * seed
            runs = {
                recipe: {
                    "val_loss": base + gap + (noise_draws[r] if recipe != "fp32" else 0.0),
                    "losses": [3.0, 2.5, 2.0],
                    "spikes": [5] if recipe == "nvfp4_static" else [],
                    "max_gradients": {"blocks.0.mlp.up": 0.5},
                    "max_gradient": 0.5,
                    "sharpness": (10.0 if arch == "gpt" else 4.0) + seed * (1 + a),
                    "sharpness_estimates": [1.0],
                }
                for r, (recipe, gap) in enumerate(gaps[arch].items())
            }
            job = {"arch": arch, "seed": seed, "lr": 0.003, "log_every": 4, "runs": runs}
            write_json(run_path(folder, arch, seed), job)
            sizes = {
                str(d): {
                    "val_loss": 2.0,
                    "layers": {},
                    "snr_db": 17.0 + (slopes[arch] + 0.1 * seed * a) * np.log2(d / 32),
                    "rho": rho[arch] + 0.001 * seed * (1 + a),
                    "rho_noise": noise,
                }
                for d in HIDDENS
            }
            write_json(mechanism_path(folder, arch, seed), {"sizes": sizes})


def checks_of(folder):
    return holm_adjust(results.claim_checks(PARAMS, load_runs(PARAMS, SEEDS, folder), SEEDS))


def test_the_module_is_a_results_interface():
    assert results_module("ngpt_fp4") is results


def test_gaps_and_slopes_recover_the_planted_values(tmp_path):
    write_runs(tmp_path)
    runs = load_runs(PARAMS, SEEDS, tmp_path)
    assert gaps(runs, "gpt", "nvfp4") == pytest.approx([0.10] * 3, abs=0.01)
    assert snr_slopes(runs, "ngpt") == pytest.approx([2.0, 2.1, 2.2])
    assert runs["tuning"] == {"gpt": 0.003, "ngpt": 0.003}


def test_the_table_has_every_row_and_no_delta_for_full_precision(tmp_path):
    write_runs(tmp_path)
    table = results.table(PARAMS, load_runs(PARAMS, SEEDS, tmp_path), SEEDS)
    assert table.methods[:2] == ["gpt/fp32", "gpt/nvfp4"] and len(table.methods) == 8
    summary = summarize(table.records, table.methods, table.columns, table.not_applicable)
    delta = summary[(summary.method == "gpt/nvfp4_rht_sr") & (summary.column == DELTA)]
    assert delta["mean"].item() == pytest.approx(0.04, abs=0.005)
    assert ("ngpt/fp32", DELTA) in table.not_applicable
    assert not any(r.method.endswith("fp32") and r.column == DELTA for r in table.records)


def test_every_claim_holds_on_the_planted_mechanism(tmp_path):
    write_runs(tmp_path)
    checks = checks_of(tmp_path)
    assert [c["kind"] for c in checks] == [
        "paired",
        "paired",
        "bound",
        "tolerance",
        "paired",
        "paired",
        "paired",
    ]
    assert all(c["holds"] for c in checks), [c["statement"] for c in checks if not c["holds"]]


def test_claims_fail_when_the_planted_mechanism_is_reversed(tmp_path):
    reversed_gaps = {"gpt": GAPS["ngpt"], "ngpt": GAPS["gpt"]}
    write_runs(tmp_path, gaps=reversed_gaps, slopes={"gpt": 2.0, "ngpt": 0.5}, noise=0.1)
    holds = [c["holds"] for c in checks_of(tmp_path)]
    # gap ordering, GPT's need for Hadamard/SR (now 0.03 -> 0.025 < min effect), nGPT's
    # independence of it (0.06 > margin), uncorrelated noise and the slope all fail.
    assert holds == [False, False, False, False, True, False, True]


def test_metrics_and_curves(tmp_path):
    write_runs(tmp_path)
    runs = load_runs(PARAMS, SEEDS, tmp_path)
    metrics = results.study_metrics(PARAMS, runs, SEEDS)
    mechanism = metrics["mechanism"]["ngpt"]
    assert mechanism["snr_slope_db_per_doubling"]["mean"] == pytest.approx(2.1)
    assert mechanism["predicted_gain_db"]["128"] == pytest.approx(10 * np.log10(1 + 127 * 0.102))
    assert metrics["rows"]["gpt/nvfp4_static"]["spikes"]["mean"] == 1.0
    curves = results.curve_rows(PARAMS, runs, SEEDS)
    steps = curves[curves.series == "gpt/nvfp4"].x.tolist()
    assert steps == [4.0, 8.0, 10.0]
    assert sorted(curves[curves.series == "ngpt/snr_db"].x.tolist()) == HIDDENS
