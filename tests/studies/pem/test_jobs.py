"""The workflow's jobs at ci scale: params checks, the tuning and run files, the study's
contract files and byte-identical reruns."""

import copy
import hashlib

import pytest

from reprolab.core.io import read_json
from reprolab.core.params import SCALES, ParamsError, check_section, load_schema
from reprolab.core.summary import summarize_study
from reprolab.core.tuning import read_tuning
from reprolab.studies.pem.domains import PROJECTIONS
from reprolab.studies.pem.jobs import BUDGET_KEYS, run_job
from reprolab.studies.pem.tune import tune_method
from reprolab.studies.pem.workflow_io import CONFIGS, check_params, config_fields, snr_key

from .conftest import section

SUMMARY_FILES = ("table.csv", "table.md", "table.tex", "claims.json", "metrics.json")


TUNING_SEEDS = [1000]


def tune_all(params: dict, folder) -> list:
    """Every method's pem_tune job at `params`' scale into `folder`; the record paths."""
    paths = {}
    for method in params["methods"]:  # pem before pem_batch, as the rule's inputs order them
        upstream = [paths[m] for m in ("pem",) if method == "pem_batch"]
        paths[method] = folder / f"{method}.json"
        tune_method(params, method, TUNING_SEEDS, paths[method], upstream=upstream)
    return list(paths.values())


def _workflow(params: dict, root) -> dict[str, str]:
    """Run every job of the ci scale (tuning, runs) and the summary into root; sha256 of every
    output."""
    seeds = [0, 1]
    tuning = tune_all(params, root / "tuning")
    for snr in params["noise_db"]:
        for seed in seeds:
            out = root / "runs" / snr_key(snr) / f"seed{seed}"
            run_job(float(snr), seed, params, 1, out, tuning)
    summarize_study("pem", params, seeds, root, tuning_files=tuning)
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
    tuned = {m: read_tuning(root / "tuning" / f"{m}.json")["selected"] for m in params["methods"]}
    assert run["tuned"] == tuned
    claims = read_json(root / "claims.json")["claims"]
    assert claims[-1]["kind"] == "sanity" and claims[-1]["holds"]
    assert all(isinstance(c["holds"], bool) for c in claims)
    metrics = read_json(root / "metrics.json")
    assert set(metrics["tuning"]) == set(params["methods"])
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


@pytest.mark.parametrize("method", list(CONFIGS))
def test_params_schema_lists_the_fields_of_each_config(method):
    """A job builds `config(**section | tuned values)`: the schema's keys must be the config's
    fields, its required keys the budget, and the grid axes the rest."""
    schema = load_schema("studies/pem.schema.yaml")["properties"]
    spec = schema[method]
    fields = sorted(config_fields(method))
    assert sorted(spec["properties"]) == fields
    assert set(spec["required"]) <= set(BUDGET_KEYS) | {"betas"}
    axes = schema["tune"]["properties"]["grid"]["properties"][method]["propertyNames"]["enum"]
    assert sorted(axes) == sorted(set(fields) - set(BUDGET_KEYS))


def test_check_params_accepts_every_scale():
    for scale in SCALES:
        check_params(section(scale))


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda p: p["tune"]["grid"].pop("nsm"), r"no grid for method\(s\) \['nsm'\]"),
        (
            lambda p: p["tune"]["grid"]["nsm"]["lr"].pop(),
            r"pem.tune.grid.nsm: 6 grid points, PEM's grid has 9",
        ),
        (lambda p: p["nsm"].update(lr=0.1), r"pem.nsm: \['lr'\] also on the tuning grid"),
        (
            lambda p: p["tune"]["grid"]["corinfomax"].pop("forget"),
            r"pem.corinfomax: no value for \['forget'\]",
        ),
    ],
)
def test_check_params_rejects_unfair_or_incomplete_grids(change, message):
    params = copy.deepcopy(section("smoke"))
    change(params)
    with pytest.raises(ValueError, match=message):
        check_params(params)


def test_a_smaller_grid_is_allowed_only_for_a_whole_categorical_space():
    params = section("smoke")
    assert len(params["tune"]["grid"]["fastica"]["fun"]) == 3  # 3 x 2 = 6 < 9 points
    check_params(params)


def test_params_schema_knows_the_domains_of_the_code():
    sources = load_schema("studies/pem.schema.yaml")["properties"]["sources"]
    assert sources["additionalProperties"]["properties"]["domain"]["enum"] == list(PROJECTIONS)
