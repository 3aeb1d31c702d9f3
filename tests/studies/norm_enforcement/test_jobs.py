"""norm_enforcement's tuning and run jobs end to end at ci scale; byte-identical reruns."""

from __future__ import annotations

import copy
import hashlib
import json

import h5py
import pytest

from reprolab.core.io import read_json
from reprolab.studies.norm_enforcement.jobs import (
    LOG_FIELDS,
    enforcement_for,
    run_job,
    tuning_key,
)
from reprolab.studies.norm_enforcement.tune import tune_environment
from reprolab.studies.norm_enforcement.workflow_io import check_params, tuned_mechanisms
from tests.conftest import study_section
from tests.studies.overcorrection.fixtures import save_tiny_lm


@pytest.fixture(scope="module")
def params() -> dict:
    return copy.deepcopy(study_section("norm_enforcement", "ci"))


@pytest.fixture(scope="module")
def done(tmp_path_factory, params) -> dict:
    """Every tuning record (one tuning seed) and one run."""
    root = tmp_path_factory.mktemp("norm_enforcement")
    records = []
    for environment in params["environments"]:
        paths = {m: root / "tuning" / environment / f"{m}.json" for m in tuned_mechanisms(params)}
        tune_environment(params, environment, [1000], paths)
        records += list(paths.values())
    out = run_job(params, 0, records, root / "run")
    return {"root": root, "records": records, "metrics": out}


def test_every_mechanism_is_tuned_on_the_same_grid(done, params):
    grid = params["tune"]["grid"]["fine"]
    for path in done["records"]:
        record = read_json(path)
        assert [t["values"]["fine"] for t in record["trials"]] == grid
        assert record["selected"]["fine"] in grid
        assert record["limits"] == {"fine": [0.0, params["enforcement"]["max_fine"]]}


def test_the_run_applies_the_tuned_fines_and_scores_every_episode(done, params):
    metrics = done["metrics"]
    for environment in params["environments"]:
        assert list(metrics["table"][environment]) == params["methods"]
        for mechanism in tuned_mechanisms(params):
            chosen = read_json(done["root"] / "tuning" / environment / f"{mechanism}.json")[
                "selected"
            ]["fine"]
            assert metrics["fines"][environment][mechanism] == chosen
        assert metrics["fines"][environment]["none"] == 0.0
    for name in params["populations"]:
        for environment in params["environments"]:
            assert list(metrics["populations"][name][environment]) == list(
                params["population_mechanisms"]
            )


def test_episodes_file_holds_every_table_episode(done, params):
    with h5py.File(done["root"] / "run" / "episodes.h5") as handle:
        assert set(handle) == set(params["environments"])
        assert set(handle["fishery"]) == set(params["methods"])
        assert set(handle["fishery/robust"]) == set(LOG_FIELDS)
        violated = handle["engagement/robust/violated"][()]
    assert violated.shape == (params["rounds"], sum(params["population"].values()))


def test_a_rerun_is_byte_identical(done, params, tmp_path):
    run_job(params, 0, done["records"], tmp_path)
    for name in ("metrics.json", "episodes.h5"):
        first = hashlib.sha256((done["root"] / "run" / name).read_bytes()).hexdigest()
        assert hashlib.sha256((tmp_path / name).read_bytes()).hexdigest() == first


def test_a_fined_mechanism_without_its_record_is_named(params):
    with pytest.raises(ValueError, match=tuning_key("fishery", "robust")):
        enforcement_for(params, "fishery", "robust", {})


def test_a_language_model_plays_the_adaptive_seats_and_its_transcripts_are_written(
    params, tmp_path, no_network
):
    """The paper scale's backend end to end, on a tiny random model: every adaptive seat's
    observation is answered by the model (random weights rarely write valid JSON, so most
    answers fall back, each failure recorded), and the run writes transcripts.jsonl."""
    folder = save_tiny_lm(tmp_path / "model", "llama", ["violate", "report", "true", "false"])
    small = {
        **params,
        "methods": ["none", "robust"],
        "environments": ["fishery"],
        "rounds": 2,
        "populations": {},
        "population_mechanisms": [],
        "agents": {
            **params["agents"],
            "backend": "language_model",
            "language_model": {
                "folder": str(folder),
                "max_new_tokens": 4,
                "device": "cpu",
                "dtype": "float32",
            },
        },
    }
    check_params(small)
    records = {"robust": tmp_path / "robust.json"}
    tune_environment({**small, "tune": {"grid": {"fine": [1.0]}}}, "fishery", [1000], records)
    run_job(small, 0, list(records.values()), tmp_path / "run")
    lines = (tmp_path / "run" / "transcripts.jsonl").read_text().splitlines()
    adaptive = small["population"]["adaptive"]
    assert len(lines) == 2 * 2 * adaptive  # rounds x mechanisms x adaptive seats (none suspended)
    first = json.loads(lines[0])
    assert set(first) == {"prompt", "raw", "action", "error"}
    assert "Norm: Do not catch more than your quota." in first["prompt"]
