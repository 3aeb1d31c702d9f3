"""The workflow's jobs at ci scale: params checks, the run files, the study's contract files
and byte-identical reruns."""

import copy
import dataclasses
import hashlib

import pytest

from reprolab.core.io import read_json
from reprolab.core.params import SCALES, ParamsError, check_section, load_schema
from reprolab.core.summary import summarize_study
from reprolab.studies.pem import baselines
from reprolab.studies.pem.batch import BatchConfig
from reprolab.studies.pem.domains import PROJECTIONS
from reprolab.studies.pem.jobs import run_job
from reprolab.studies.pem.pem import OnlineConfig
from reprolab.studies.pem.results import snr_key

from .conftest import section

SUMMARY_FILES = ("table.csv", "table.md", "table.tex", "claims.json", "metrics.json")


def _workflow(params: dict, root) -> dict[str, str]:
    """Run every job of the ci scale and the summary into root; sha256 of every output."""
    seeds = [0, 1]
    for snr in params["noise_db"]:
        for seed in seeds:
            run_job(float(snr), seed, params, 1, root / "runs" / snr_key(snr) / f"seed{seed}")
    summarize_study("pem", params, seeds, root)
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
    assert claims[-1]["kind"] == "sanity" and claims[-1]["holds"]
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
    for scale in SCALES:
        values = section(scale)
        check_section(values, "pem")
    bad = copy.deepcopy(section("smoke"))
    bad["pem"]["step"] = 1.0
    with pytest.raises(ParamsError, match="key 'pem.pem'.*'step' was unexpected"):
        check_section(bad, "pem")


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (("methods", ["pem", "nsm", "ica"]), r"key 'pem.methods.2': 'ica' is not one of"),
        (("methods", ["pem", "fastica"]), r"key 'pem.methods'.*so list nsm"),
        (("sources", {"s": {"domain": "box"}}), r"key 'pem.sources.s': 'rho' is a required"),
        (("sources", {"s": {"domain": "ball"}}), r"key 'pem.sources.s.domain': 'ball' is not one"),
    ],
)
def test_params_schema_checks_the_bad_key(change, message):
    params = copy.deepcopy(section("ci"))
    params[change[0]] = change[1]
    with pytest.raises(ParamsError, match=message):
        check_section(params, "pem")


def test_params_schema_checks_an_unknown_hyperparameter():
    params = copy.deepcopy(section("ci"))
    params["nsm"]["momentum"] = 0.9
    with pytest.raises(ParamsError, match=r"key 'pem.nsm'.*'momentum' was unexpected"):
        check_section(params, "pem")


@pytest.mark.parametrize(
    ("key", "config"),
    [
        ("pem", OnlineConfig),
        ("pem_batch", BatchConfig),
        ("detmax", BatchConfig),
        ("corinfomax", baselines.CorInfoMaxConfig),
        ("nsm", baselines.NSMConfig),
    ],
)
def test_params_schema_lists_the_fields_of_each_config(key, config):
    """A job builds `config(**params[key])`: the schema's keys must be the dataclass's fields."""
    spec = load_schema("studies/pem.schema.yaml")["properties"][key]
    fields = sorted(field.name for field in dataclasses.fields(config))
    assert sorted(spec["properties"]) == fields and sorted(spec["required"]) == fields


def test_params_schema_knows_the_domains_of_the_code():
    sources = load_schema("studies/pem.schema.yaml")["properties"]["sources"]
    assert sources["additionalProperties"]["properties"]["domain"]["enum"] == list(PROJECTIONS)
