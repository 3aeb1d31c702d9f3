"""The proofrank jobs on small inputs: the data job keeps what it can read and names the rest;
a run job on retrieval backends writes both tables' measures, byte-identical when repeated."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from reprolab.core.io import read_json
from reprolab.core.params import load_yaml, study_params
from reprolab.core.tuning import tune, write_tuning
from reprolab.studies.proofrank.corpus import bundled_files, corpus_text, read_corpus
from reprolab.studies.proofrank.jobs import run_seed, train_backend, write_data
from reprolab.studies.proofrank.tune import METHOD
from reprolab.studies.proofrank.workflow_io import trained_backends
from tests.conftest import ROOT


def params(**corpus: Any) -> dict[str, Any]:
    values = study_params({**load_yaml(ROOT / "params.yaml"), "scale": "smoke"}, "proofrank")
    values = copy.deepcopy(values)
    values["corpus"] |= corpus
    values["backends"] = {
        k: v for k, v in values["backends"].items() if v["kind"] not in ("lm", "hf")
    }
    return values


@pytest.fixture
def tuned(tmp_path: Path) -> Path:
    path = tmp_path / "tuned.json"
    record = tune(METHOD, {"regularisation": [0.3]}, lambda v, s: 1.0, [1000], "accuracy", "max")
    write_tuning(path, record)
    return path


def test_the_data_job_writes_what_it_read_and_reports_the_rest(tmp_path, tuned):
    theorems, _ = read_corpus(bundled_files())
    source = tmp_path / "mine.jsonl"
    source.write_text(corpus_text(theorems[:4]) + "{broken\n")
    corpus, report = tmp_path / "corpus.jsonl", tmp_path / "report.json"
    found = write_data(params(files=[str(source)]), tuned, corpus, report)
    assert read_corpus([corpus])[0] == theorems[:4]
    assert found["theorems"] == 4 and found["problems"] == [
        f"{source}:5: not valid JSON (Expecting property name enclosed in double quotes at "
        "column 2)"
    ]
    assert read_json(report) == found


def test_a_corpus_with_nothing_readable_is_an_error_listing_why(tmp_path, tuned):
    source = tmp_path / "bad.jsonl"
    source.write_text("[]\n")
    with pytest.raises(ValueError, match="bad.jsonl:1: a line must hold one object"):
        write_data(params(files=[str(source)]), tuned, tmp_path / "c.jsonl", tmp_path / "r.json")


def test_a_run_measures_validity_and_every_backend_and_repeats_byte_for_byte(tmp_path, tuned):
    theorems, _ = read_corpus(bundled_files())
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(corpus_text(theorems[::5]))
    values = params()
    first = tmp_path / "a.json"
    metrics = run_seed(values, 3, corpus, tuned, {}, first, threads=1)
    assert set(metrics["harness"]) == set(values["backends"])
    assert metrics["validity"]["identity"] == dict.fromkeys(metrics["validity"]["padding"], 0.0)
    assert metrics["judge_on_corpus"]["agree"] == metrics["judge_on_corpus"]["proofs"]
    second = tmp_path / "b.json"
    run_seed(values, 3, corpus, tuned, {}, second, threads=1)
    assert first.read_bytes() == second.read_bytes()
    assert json.loads(first.read_text())["seed"] == 3


def test_a_small_model_trained_by_its_job_is_a_backend_of_the_run(tmp_path, tuned, no_network):
    theorems, _ = read_corpus(bundled_files())
    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text(corpus_text(theorems[::10]))
    values = study_params({**load_yaml(ROOT / "params.yaml"), "scale": "ci"}, "proofrank")
    values["backends"] = {"retrieval_random": {"kind": "retrieval", "mode": "random"}} | {
        name: spec for name, spec in values["backends"].items() if spec["kind"] == "lm"
    }
    (name,) = trained_backends(values)
    record = train_backend(values, name, corpus, tmp_path / "lm", threads=1)
    assert record["steps"] == values["backends"][name]["steps"]
    metrics = run_seed(
        values, 0, corpus, tuned, {name: str(tmp_path / "lm")}, tmp_path / "m.json", 1
    )
    written = metrics["harness"][name]
    assert 0.0 <= written["measures"]["correctness"] <= 1.0 and written["example"]["text"]
