"""The study's jobs end to end at ci scale: tuning, per-seed evaluation, summary, determinism."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from reprolab.core.io import read_json
from reprolab.core.summary import summarize_study
from reprolab.studies.icl_manifold.jobs import evaluate_seed, read_tuning, tune_setting
from reprolab.studies.icl_manifold.results import read_errors

SEEDS = [0, 1]


def run_study(params, root: Path) -> None:
    """The workflow's layout under root: data/icl_manifold/tuning, out/runs, the summary in out
    (run from root, where the summary finds the tuning files)."""
    paths = [root / "data/icl_manifold/tuning" / f"{s}.json" for s in params["settings"]]
    for setting, path in zip(params["settings"], paths, strict=True):
        tune_setting(params, setting, path)
    tuned = read_tuning(paths)
    for seed in SEEDS:
        evaluate_seed(params, seed, tuned, 1, root / "out/runs" / f"seed{seed}")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(root)
        summarize_study("icl_manifold", params, SEEDS, root / "out")


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
        "out/table.csv",
        "out/claims.json",
        "out/metrics.json",
        "out/table.tex",
        "out/curves.csv",
    ]
    for name in files:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def test_unknown_setting_and_method_are_named(ci_params, tmp_path):
    with pytest.raises(ValueError, match="unknown setting 'torus'"):
        tune_setting(ci_params, "torus", tmp_path / "x.json")
    with pytest.raises(ValueError, match="unknown \\['gp'\\]"):
        evaluate_seed({**ci_params, "methods": ["oracle_lp", "gp"]}, 0, {}, 1, tmp_path)
    with pytest.raises(ValueError, match="twostage_exact needs twostage_tf"):
        evaluate_seed({**ci_params, "methods": ["oracle_lp", "twostage_exact"]}, 0, {}, 1, tmp_path)
