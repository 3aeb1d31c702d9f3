"""The workflow's jobs at ci scale: params checks, the run files, the study's contract files
and byte-identical reruns."""

import copy
import hashlib

import jsonschema
import pytest

from reprolab.core.io import read_json
from reprolab.core.params import SCALES
from reprolab.studies.pem.jobs import check_params, run_job
from reprolab.studies.pem.results import snr_key, summarize_study

from .conftest import schema, section

SUMMARY_FILES = ("table.csv", "table.md", "table.tex", "claims.json", "metrics.json")


def _workflow(params: dict, root) -> dict[str, str]:
    """Run every job of the ci scale and the summary into root; sha256 of every output."""
    seeds = [0, 1]
    for snr in params["noise_db"]:
        for seed in seeds:
            run_job(float(snr), seed, params, 1, root / "runs" / snr_key(snr) / f"seed{seed}")
    summarize_study(params, seeds, root / "runs", root)
    files = sorted(p for p in root.rglob("*") if p.is_file())
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


@pytest.fixture(scope="module")
def ci_run(tmp_path_factory):
    params = section("ci")
    root = tmp_path_factory.mktemp("pem_ci")
    return root, _workflow(params, root)


def test_ci_workflow_writes_the_contract_files(ci_run):
    root, hashes = ci_run
    params = section("ci")
    for name in SUMMARY_FILES:
        assert name in hashes
    run = read_json(root / "runs" / snr_key(params["noise_db"][0]) / "seed0" / "metrics.json")
    assert set(run["sources"]) == set(params["sources"])
    for source in params["sources"]:
        assert set(run["sources"][source]) == set(params["methods"])
    assert len(run["sources"]["box_r07"]["pem"]["curves"]["sinr"]) == params["pem"]["epochs"]
    table = (root / "table.md").read_text()
    for method in params["methods"]:
        assert f"| {method} |" in table
    claims = read_json(root / "claims.json")["claims"]
    assert claims[-1]["kind"] == "bound check" and claims[-1]["holds"]
    assert all(isinstance(c["holds"], bool) for c in claims)
    metrics = read_json(root / "metrics.json")
    assert set(metrics["surrogate_bound"][snr_key(30)]["simplex"]) == {
        "pem",
        "pem_batch",
        "detmax",
    }


def test_ci_workflow_is_byte_identical_when_rerun(ci_run, tmp_path):
    _, hashes = ci_run
    assert _workflow(section("ci"), tmp_path) == hashes


def test_params_satisfy_the_schema_at_every_scale():
    spec = schema()
    for scale in SCALES:
        values = section(scale)
        jsonschema.validate(values, spec)
        check_params(values)
    bad = copy.deepcopy(section("smoke"))
    bad["pem"]["step"] = 1.0
    with pytest.raises(jsonschema.ValidationError, match="step"):
        jsonschema.validate(bad, spec)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("methods", ["pem", "ica"]), r"pem.methods: unknown \['ica'\]"),
        (("methods", ["pem", "fastica"]), "the claims need 'nsm'"),
        (("sources", {"s": {"domain": "box"}}), "pem.sources.s: a box source needs 'rho'"),
        (("sources", {"s": {"domain": "ball"}}), "unknown domain 'ball'"),
    ],
)
def test_check_params_names_the_bad_key(change, message):
    params = copy.deepcopy(section("ci"))
    params[change[0]] = change[1]
    with pytest.raises(ValueError, match=message):
        check_params(params)


def test_check_params_rejects_an_unknown_hyperparameter():
    params = copy.deepcopy(section("ci"))
    params["nsm"]["momentum"] = 0.9
    with pytest.raises(TypeError, match="momentum"):
        check_params(params)
