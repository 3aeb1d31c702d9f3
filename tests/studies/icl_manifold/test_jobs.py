"""The study's jobs end to end at ci scale: classical and network tuning, per-seed evaluation,
summary, determinism."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from reprolab.core.io import read_json
from reprolab.core.summary import summarize_study
from reprolab.core.tuning import selected
from reprolab.studies.icl_manifold.jobs import (
    NETWORKS,
    evaluate_seed,
    read_tuning,
    train_network,
    training_pool,
    tune_network,
    tune_setting,
    validation_prompts,
    validation_score,
)
from reprolab.studies.icl_manifold.results import read_errors

SEEDS = [0, 1]
TUNING_SEEDS = [1000]  # params.yaml's tuning_seeds at ci


def network_records(root: Path) -> list[Path]:
    """Where the workflow puts the networks' tuning records under root."""
    return [root / "data/icl_manifold/tuning/networks" / f"{m}.json" for m in NETWORKS]


def run_study(params, root: Path) -> None:
    """The workflow's layout under root: data/icl_manifold/tuning (classical, and networks/),
    out/runs, the summary in out (run from root, where the summary finds the tuning files)."""
    paths = [root / "data/icl_manifold/tuning" / f"{s}.json" for s in params["settings"]]
    for setting, path in zip(params["settings"], paths, strict=True):
        tune_setting(params, setting, TUNING_SEEDS, path)
    records = network_records(root)
    for method, path in zip(NETWORKS, records, strict=True):
        tune_network(params, method, TUNING_SEEDS, 1, path)
    tuned, lrs = read_tuning(paths), selected(records)
    for seed in SEEDS:
        evaluate_seed(params, seed, tuned, lrs, 1, root / "out/runs" / f"seed{seed}")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        summarize_study("icl_manifold", params, SEEDS, root / "out", tuning_files=records)


@pytest.fixture(scope="module")
def two_runs(ci_params, tmp_path_factory, torch_one_thread):
    roots = [tmp_path_factory.mktemp(name) for name in ("a", "b")]
    for root in roots:
        run_study(ci_params, root)
    return roots


def test_contract_files_and_their_content(ci_params, two_runs):
    out = two_runs[0] / "out"
    for name in ("table.csv", "table.md", "table.tex", "claims.json", "metrics.json", "curves.csv"):
        assert (out / name).is_file()
    table = (out / "table.md").read_text()
    for method in ci_params["methods"]:
        assert f"| {method} |" in table
    assert "slope (theory -0.857)" in table
    claims = read_json(out / "claims.json")["claims"]
    assert len(claims) == len(ci_params["settings"]) + 1 + 1 + 1 + 3 + 1
    assert all(isinstance(c["holds"], bool) for c in claims)
    metrics = read_json(out / "metrics.json")
    fit = metrics["settings"]["mixture"]["methods"]["oracle_lp"]["slope"]
    assert fit["pooled"]["ci_low"] <= fit["pooled"]["slope"] <= fit["pooled"]["ci_high"]
    methods, errors = read_errors(out / "runs/seed0/errors.h5")
    assert methods == ci_params["methods"]
    shape = (len(methods), len(ci_params["sizes"]), ci_params["eval"]["prompts"])
    assert errors["growing"].shape == shape and np.all(errors["growing"] >= 0)


def test_same_inputs_give_byte_identical_outputs(two_runs):
    a, b = two_runs
    files = [
        "out/runs/seed0/errors.h5",
        "out/runs/seed1/training.json",
        "data/icl_manifold/tuning/mixture.json",
        "data/icl_manifold/tuning/networks/twostage_tf.json",
        "data/icl_manifold/tuning/networks/lintf.json",
        "out/table.csv",
        "out/claims.json",
        "out/metrics.json",
        "out/table.tex",
        "out/curves.csv",
    ]
    for name in files:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def test_network_tuning_records_and_the_runs_that_use_them(ci_params, two_runs):
    root = two_runs[0]
    budgets = []
    for method, path in zip(NETWORKS, network_records(root), strict=True):
        record = read_json(path)
        grid = ci_params["tuning"]["networks"]["grid"][method]
        assert record["format"] == "reprolab.tuning/1" and record["method"] == method
        assert record["tuning_seeds"] == TUNING_SEEDS and record["goal"] == "min"
        assert [t["values"]["lr"] for t in record["trials"]] == grid["lr"]
        assert all(len(t["per_seed"]) == len(TUNING_SEEDS) for t in record["trials"])
        best = min(t["score"] for t in record["trials"] if np.isfinite(t["score"]))
        assert record["score"] == best and record["selected"]["lr"] in grid["lr"]
        assert record["validation"]["settings"] == list(ci_params["settings"])
        budgets.append(record["budget"])
        # every table seed trained this network at the budget with the selected lr
        for seed in SEEDS:
            run = read_json(root / "out/runs" / f"seed{seed}" / "training.json")[method]
            assert run["optimiser"]["lr"] == record["selected"]["lr"]
            assert {k: run["optimiser"][k] for k in ("steps", "batch", "clip")} == {
                k: record["budget"][k] for k in ("steps", "batch", "clip")
            }
            assert len(run["losses"]) == ci_params["train"]["steps"]
    assert budgets[0] == budgets[1]  # the same budget for both networks
    tuning = read_json(root / "out/metrics.json")["tuning"]
    assert set(tuning) == set(NETWORKS)
    grid = ci_params["tuning"]["networks"]["grid"]
    assert tuning["lintf"]["grid_points"] == len(grid["lintf"]["lr"])


def test_a_tuning_trial_is_the_evaluation_training_on_a_tuning_seed(
    ci_params, two_runs, torch_one_thread
):
    record = read_json(network_records(two_runs[0])[1])  # lintf
    trial = record["trials"][-1]
    seed = TUNING_SEEDS[0]
    pool = training_pool(ci_params, seed)
    net, _ = train_network(ci_params, "lintf", seed, pool, trial["values"]["lr"])
    score = validation_score(net, validation_prompts(ci_params, seed))
    assert score == pytest.approx(trial["per_seed"][0], rel=1e-9)


def test_a_diverging_learning_rate_is_never_selected(ci_params, tmp_path, torch_one_thread):
    tuning = ci_params["tuning"]
    params = {
        **ci_params,
        "train": {**ci_params["train"], "steps": 4},
        "tuning": {
            **tuning,
            "networks": {**tuning["networks"], "grid": {"twostage_tf": {"lr": [0.01, 1e4]}}},
        },
    }
    record = tune_network(params, "twostage_tf", TUNING_SEEDS, 1, tmp_path / "t.json")
    scores = [t["score"] for t in record["trials"]]
    assert np.isfinite(scores[0]) and not np.isfinite(scores[1])
    assert record["selected"] == {"lr": 0.01}


def test_unknown_setting_and_method_are_named(ci_params, tmp_path):
    with pytest.raises(ValueError, match="unknown setting 'torus'"):
        tune_setting(ci_params, "torus", TUNING_SEEDS, tmp_path / "x.json")
    with pytest.raises(ValueError, match="'knn' is not a trained network"):
        tune_network(ci_params, "knn", TUNING_SEEDS, 1, tmp_path / "x.json")
    with pytest.raises(ValueError, match="unknown \\['gp'\\]"):
        evaluate_seed({**ci_params, "methods": ["oracle_lp", "gp"]}, 0, {}, {}, 1, tmp_path)
    with pytest.raises(ValueError, match="twostage_exact needs twostage_tf"):
        evaluate_seed(
            {**ci_params, "methods": ["oracle_lp", "twostage_exact"]}, 0, {}, {}, 1, tmp_path
        )
    with pytest.raises(ValueError, match="no learning-rate tuning record for \\['lintf'\\]"):
        evaluate_seed(ci_params, 0, {}, {"twostage_tf": {"lr": 0.01}}, 1, tmp_path)
