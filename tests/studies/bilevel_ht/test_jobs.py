"""End to end at ci scale: jobs + summarize write the contract files, byte-identically twice;
the params fragment satisfies its schema at every scale; bad params are named."""

from __future__ import annotations

import copy
import hashlib
from pathlib import Path

import jsonschema
import pytest

from reprolab.core.io import read_json
from reprolab.core.params import SCALES
from reprolab.studies.bilevel_ht.jobs import check_params, read_curves, run_job
from reprolab.studies.bilevel_ht.results import run_path, summarize_study
from tests.conftest import ROOT, section_schema

from .conftest import section

SEEDS = [0, 1]
OUTPUTS = ("table.csv", "table.md", "table.tex", "claims.json", "metrics.json")


def _workflow(params: dict, out: Path) -> dict[str, str]:
    """Every job of the ci scale, then the summary; sha256 of every file written."""
    for dataset in params["datasets"]:
        for topology in params["topologies"]:
            for seed in SEEDS:
                run_job(
                    params,
                    dataset,
                    topology,
                    seed,
                    run_path(out / "runs", dataset, topology, seed).parent,
                )
    summarize_study(params, SEEDS, out / "runs", out)
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
    assert claims["study"] == "bilevel_ht" and len(claims["claims"]) == 1 + 3 + 2 * 2 * 4
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


def test_ci_workflow_is_byte_identical_when_rerun(ci_run, ci_params, tmp_path):
    _, hashes = ci_run
    assert _workflow(ci_params, tmp_path) == hashes


def test_params_fragment_satisfies_the_schema_at_every_scale():
    schema = section_schema("bilevel_ht")
    for scale in SCALES:
        values = section(scale)
        jsonschema.validate(values, schema)
        check_params(values)
    bad = copy.deepcopy(section("smoke"))
    bad["optim"]["stepsize"] = 1.0
    with pytest.raises(jsonschema.ValidationError, match="stepsize"):
        jsonschema.validate(bad, schema)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("claims", "method", "ours"), "bilevel_ht.claims.method: 'ours' is not in methods"),
        (("claims", "control", "laplace"), "noise 'laplace' is not in bilevel_ht.noises"),
        (("optim", "lambda_box", [1.0, 2.0]), "bilevel_ht.optim.lambda_box"),
    ],
)
def test_check_params_names_the_bad_key(ci_params, change, message):
    params = copy.deepcopy(ci_params)
    params[change[0]][change[1]] = change[2]
    with pytest.raises(ValueError, match=message.replace(".", r"\.")):
        check_params(params)


def test_check_params_names_a_bad_method(ci_params):
    params = copy.deepcopy(ci_params)
    params["methods"]["dsgd"]["estimator"] = "adam"
    with pytest.raises(ValueError, match=r"bilevel_ht\.methods\.dsgd: method\.estimator"):
        check_params(params)


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
    assert html.count("image/png") >= 4  # F, stationarity, communication, consensus figures
