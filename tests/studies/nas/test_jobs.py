"""The nas jobs end to end on a tiny world: the LM job writes a world and a model that knows it;
tuning writes a record; a run seed edits with every method, is byte-identical when rerun, and
reads a stream in CounterFact's released format (the paper-scale path) as well."""

from __future__ import annotations

import json

import pytest

from reprolab.core.io import read_json
from reprolab.core.tuning import selected
from reprolab.models.facts import query, read_world
from reprolab.studies.nas.jobs import TUNED, file_source, run_seed, train_lm
from reprolab.studies.nas.tune import tune_editing
from tests.studies.nas.conftest import SPEC

PARAMS = {
    "world": {
        "subjects": 16,
        "relations": 2,
        "objects": 4,
        "prefix_max": 1,
        "paraphrase_subjects": 0.5,
        "seed": 0,
    },
    "lm": {**SPEC, "steps": 400, "seed": 0},
    "device": "cpu",
    "stream": {"source": "world", "edits": 6, "neighbours": 2, "openings": 2},
    "editing": {
        "layers": [0, 1],
        "batch_size": 3,
        "eval_every": 3,
        "solver": {"steps": 20, "lr": 1.0, "clamp": 4.0, "weight_decay": 0.001},
    },
    "covariance": {"texts": 200},
    "generic": {"texts": 20},
    "anchor_edits": 3,
    "methods": {
        "memit": {"editor": "memit"},
        "memit_nas": {"editor": "memit", "anchor": "vstar"},
        "rome": {"editor": "rome"},
    },
    "tune": {"grid": {"weight": [1.0, 10.0], "ridge": [0.01]}, "edits": 3},
}


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    folder = tmp_path_factory.mktemp("nas")
    record = train_lm(PARAMS, folder / "lm", folder / "world.json", threads=1)
    tuning = tune_editing(
        PARAMS, folder / "lm", folder / "world.json", [1000], folder / "t.json", threads=1
    )
    return folder, record, tuning


def test_the_lm_job_writes_a_world_its_model_knows(trained):
    folder, record, _ = trained
    world = read_world(folder / "world.json")
    assert len(world.subjects) == 16 and record["accuracy"]["trained"] >= 0.95


def test_tuning_scores_every_grid_point_on_the_tuning_seeds(trained):
    folder, _, tuning = trained
    assert len(tuning["trials"]) == 2
    assert selected([folder / "t.json"])[TUNED]["weight"] in (1.0, 10.0)


def test_a_run_seed_edits_with_every_method_and_reruns_byte_identical(trained, tmp_path):
    folder, _, _ = trained
    paths = [tmp_path / "a.json", tmp_path / "b.json"]
    for path in paths:
        run_seed(PARAMS, 3, folder / "lm", folder / "world.json", folder / "t.json", path, 1)
    assert paths[0].read_bytes() == paths[1].read_bytes()
    metrics = read_json(paths[0])
    assert set(metrics["methods"]) == set(PARAMS["methods"])
    for record in metrics["methods"].values():
        assert [c["edits"] for c in record["checkpoints"]] == [3, 6]
        assert len(record["batches"]) == 2
    assert metrics["anchors"]["vstar"] > metrics["anchors"]["value"] > 0


def test_a_run_reads_a_counterfact_file_on_the_paper_path(trained, tmp_path):
    folder, _, _ = trained
    world = read_world(folder / "world.json")
    relation = world.relations[0]
    records = []
    for case, subject in enumerate(range(4)):
        true = world.object_of(subject, 0)
        new = next(o for o in relation.objects if o != true)
        name = " ".join(world.subjects[subject])
        records.append(
            {
                "case_id": case,
                "requested_rewrite": {
                    "prompt": "{} " + " ".join(relation.templates[0]),
                    "subject": name,
                    "target_new": {"str": new},
                    "target_true": {"str": true},
                },
                "paraphrase_prompts": [query(world, subject, 0, 1)],
                "neighborhood_prompts": [query(world, 10 + case, 0, 0)],
            }
        )
    (tmp_path / "cf.json").write_text(json.dumps(records), encoding="utf-8")
    lines = [query(world, s, r, 0) + " ." for s in range(16) for r in range(2)]
    (tmp_path / "texts.txt").write_text("\n".join(lines), encoding="utf-8")
    params = {
        **PARAMS,
        "stream": {
            "source": "counterfact",
            "file": str(tmp_path / "cf.json"),
            "edits": 3,
            "openings": ["well"],
            "tuning_share": 0.25,
        },
        "texts": {"file": str(tmp_path / "texts.txt")},
        "covariance": {"texts": 24},
        "generic": {"texts": 8},
        "methods": {"memit": {"editor": "memit"}},
    }
    metrics = run_seed(params, 0, folder / "lm", None, folder / "t.json", tmp_path / "m.json", 1)
    checkpoints = metrics["methods"]["memit"]["checkpoints"]
    assert [c["edits"] for c in checkpoints] == [3]
    assert 0.0 <= checkpoints[0]["efficacy"] <= 1.0
    tuning, *_ = file_source(params, 1000, 1, tuning=True)
    evaluation, *_ = file_source(params, 0, 3, tuning=False)
    assert [r.case for r in tuning] == ["3"] and "3" not in {r.case for r in evaluation}
