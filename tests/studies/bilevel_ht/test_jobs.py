"""End to end at ci scale: tune jobs + jobs + summarize write the contract files,
byte-identically twice; the run jobs use the tuned steps; the params fragment satisfies its
schema at every scale; bad params are named."""

from __future__ import annotations

import copy
import hashlib
import re
from pathlib import Path

import pytest

from reprolab.core.io import read_json
from reprolab.core.params import SCALES, ParamsError, check_section, load_schema
from reprolab.core.summary import summarize_study
from reprolab.core.tuning import read_tuning
from reprolab.studies.bilevel_ht.jobs import check_params, read_curves, run_job
from reprolab.studies.bilevel_ht.optim import ESTIMATORS, STEPS
from reprolab.studies.bilevel_ht.results import run_path
from reprolab.studies.bilevel_ht.tune import tune_method
from tests.conftest import ROOT

from .conftest import section

SEEDS = [0, 1]
TUNING_SEEDS = [1000]
OUTPUTS = ("table.csv", "table.md", "table.tex", "claims.json", "metrics.json")


def _workflow(params: dict, out: Path) -> dict[str, str]:
    """Every tune job and job of the ci scale, then the summary; sha256 of every file
    written."""
    tuning = [out / "tuning" / f"{method}.json" for method in params["methods"]]
    for method, path in zip(params["methods"], tuning, strict=True):
        tune_method(params, method, TUNING_SEEDS, path)
    for dataset in params["datasets"]:
        for topology in params["topologies"]:
            for seed in SEEDS:
                run_job(
                    params,
                    tuning,
                    dataset,
                    topology,
                    seed,
                    run_path(out / "runs", dataset, topology, seed).parent,
                )
    summarize_study("bilevel_ht", params, SEEDS, out, tuning_files=tuning)
    return {
        str(p.relative_to(out)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(out.rglob("*"))
        if p.is_file()
    }


@pytest.fixture(scope="module")
def ci_run(ci_params, tmp_path_factory):
    out = tmp_path_factory.mktemp("bilevel_ht")
    return out, _workflow(ci_params, out)


def test_ci_workflow_writes_the_contract_files(ci_run, ci_params):
    out, hashes = ci_run
    for name in OUTPUTS:
        assert name in hashes
    table = (out / "table.md").read_text()
    for method in ci_params["methods"]:
        assert f"| {method} |" in table
    assert "ring, student_t: F" in table and "exponential, pareto: diverged" in table
    claims = read_json(out / "claims.json")
    # never diverges, reaches the target, 3 unnormalised methods; per topology and heavy tail:
    # best clipping (paired), competitive (bound), the ablation (paired)
    assert claims["study"] == "bilevel_ht" and len(claims["claims"]) == 2 + 3 + 2 * 2 * 3
    assert all(isinstance(c["holds"], bool) for c in claims["claims"])
    curves, attrs = read_curves(out / "runs/breast_cancer/ring/seed0/curves.h5")
    n_noise, n_method = len(ci_params["noises"]), len(ci_params["methods"])
    assert curves["F"].shape == (n_noise, n_method, len(curves["iter"]))
    assert attrs["methods"] == list(ci_params["methods"]) and attrs["degree"] == 2
    metrics = read_json(out / "metrics.json")
    assert (
        metrics["breast_cancer"]["exponential"]["spectral_gap"]
        > metrics["breast_cancer"]["ring"]["spectral_gap"]
    )
    # the tuning summary (core.summary) and the values every job ran with agree
    assert set(metrics["tuning"]) == set(ci_params["methods"])
    for method in ci_params["methods"]:
        record = read_tuning(out / "tuning" / f"{method}.json")
        assert metrics["tuning"][method]["selected"] == record["selected"]
        assert metrics["hyperparameters"][method]["selected"] == record["selected"]
    best = metrics["best_clipping"]
    assert best["selected"] == min(best["tuning_scores"], key=best["tuning_scores"].get)


def test_ci_workflow_is_byte_identical_when_rerun(ci_run, ci_params, tmp_path):
    _, hashes = ci_run
    assert _workflow(ci_params, tmp_path) == hashes


def test_params_fragment_satisfies_the_schema_at_every_scale():
    for scale in SCALES:
        values = section(scale)
        check_section(values, "bilevel_ht")
        check_params(values)
    bad = copy.deepcopy(section("smoke"))
    bad["optim"]["stepsize"] = 1.0
    with pytest.raises(ParamsError, match="key 'bilevel_ht.optim'.*'stepsize' was unexpected"):
        check_section(bad, "bilevel_ht")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("claims", "method", "ours"), "bilevel_ht.claims.method: 'ours' is not in methods"),
        (("claims", "clipping", ["dclip_9"]), "bilevel_ht.claims.clipping: 'dclip_9' is not in"),
        (("claims", "control", "laplace"), "noise 'laplace' is not in bilevel_ht.noises"),
    ],
)
def test_check_params_names_the_bad_key(ci_params, change, message):
    params = copy.deepcopy(ci_params)
    params[change[0]][change[1]] = change[2]
    with pytest.raises(ValueError, match=message.replace(".", r"\.")):
        check_params(params)


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("tune", "topology"), "star", "bilevel_ht.tune.topology: 'star' is not in topologies"),
        (("tune", "noises"), ["laplace"], "bilevel_ht.tune: noise 'laplace' (noises) is not in"),
        (("tune", "method_noises"), {"dsgd": ["cauchy"]}, "noise 'cauchy' (dsgd) is not in noises"),
        (("tune", "method_noises"), {"adam": ["gaussian"]}, "tune.method_noises: 'adam' is not in"),
        (("tune", "grid", "dsgd"), None, "tune.grid: no grid for method(s) ['dsgd']"),
        (("tune", "grid", "dnsvrb", "eta_scale"), [1.0, 3.0], "every method needs as many points"),
    ],
)
def test_check_params_names_a_bad_tuning_setting(ci_params, path, value, message):
    params = copy.deepcopy(ci_params)
    node = params
    for key in path[:-1]:
        node = node[key]
    if value is None:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    with pytest.raises(ValueError, match=re.escape(message)):
        check_params(params)


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("optim", "lambda_box"), [1.0, 2.0], r"key 'bilevel_ht.optim.lambda_box.0'.*lo < 0"),
        (("methods", "dsgd", "estimator"), "adam", r"key 'bilevel_ht.methods.dsgd.estimator'"),
        (("methods", "dsgd", "beta"), 0.0, r"key 'bilevel_ht.methods.dsgd.beta'"),
        (
            ("methods", "dsgd", "eta_base"),
            {"x": 1.0},
            r"key 'bilevel_ht.methods.dsgd.eta_base'.*'y'",
        ),
        (("tune", "grid", "dsgd", "eta_scale"), [], r"key 'bilevel_ht.tune.grid.dsgd.eta_scale'"),
    ],
)
def test_params_schema_checks_a_bad_method_or_box(ci_params, path, value, message):
    """What check_params checked before the schema did (Method.from_params, the λ box)."""
    params = copy.deepcopy(ci_params)
    node = params
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    with pytest.raises(ParamsError, match=message):
        check_section(params, "bilevel_ht")


def test_params_schema_knows_the_estimators_and_directions_of_the_code():
    spec = load_schema("studies/bilevel_ht.schema.yaml")["properties"]["methods"]
    method = spec["additionalProperties"]["properties"]
    assert method["estimator"]["enum"] == list(ESTIMATORS)
    assert method["direction"]["enum"] == list(STEPS)


def test_report_notebook_renders_the_ci_run(ci_run, ci_params, tmp_path):
    from reprolab.core.report import render_report

    out, _ = ci_run
    parameters = {
        "results_dir": str(out),
        "datasets": list(ci_params["datasets"]),
        "topologies": ci_params["topologies"],
        "noises": list(ci_params["noises"]),
        "methods": list(ci_params["methods"]),
        "method": ci_params["claims"]["method"],
        "seeds": SEEDS,
        "scale": "ci",
    }
    render_report(
        ROOT / "workflow/notebooks/bilevel_ht.ipynb",
        tmp_path / "report.ipynb",
        tmp_path / "report.html",
        parameters=parameters,
        cwd=ROOT,
    )
    html = (tmp_path / "report.html").read_text()
    assert "claim checks hold" in html and "Traceback" not in html
    assert "Best clipping threshold on the tuning seeds" in html and "Step sizes used" in html
    assert html.count("image/png") >= 4  # F, stationarity, communication, consensus figures
