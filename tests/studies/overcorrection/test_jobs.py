"""The overcorrection jobs at ci scale, end to end in one temporary folder: readers trained
byte-identically, one tuning record per reader, channel and tuned selector, and a run file with
every cell, written byte-identically twice."""

from __future__ import annotations

from pathlib import Path

import pytest

from reprolab.core.io import read_json
from reprolab.core.params import study_params
from reprolab.core.tuning import read_tuning, selected
from reprolab.studies.overcorrection import jobs
from reprolab.studies.overcorrection.workflow_io import tuned_methods
from tests.studies.overcorrection.test_workflow_io import CONFIG

PARAMS = study_params({**CONFIG, "scale": "ci"}, "overcorrection")
TUNING_SEED, SEED = 1000, 0


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("readers")
    for name in PARAMS["readers"]:
        for seed in (TUNING_SEED, SEED):
            weights, record = jobs.reader_paths(folder, name, seed)
            weights.parent.mkdir(parents=True, exist_ok=True)
            jobs.train_job(PARAMS, name, seed, weights, record, 1)
    return folder


def test_training_is_byte_identical_and_records_its_curve(trained: Path, tmp_path: Path):
    for name in PARAMS["readers"]:
        weights, record = jobs.reader_paths(tmp_path, name, SEED)
        weights.parent.mkdir(parents=True)
        jobs.train_job(PARAMS, name, SEED, weights, record, 1)
        first_weights, first_record = jobs.reader_paths(trained, name, SEED)
        assert weights.read_bytes() == first_weights.read_bytes()
        assert record.read_bytes() == first_record.read_bytes()
        assert read_json(record)["final_loss"] < read_json(record)["loss"][0]


def test_tuning_then_run_write_every_record_and_cell_byte_identically(trained: Path, tmp_path):
    for name in PARAMS["readers"]:
        weights = {TUNING_SEED: jobs.reader_paths(trained, name, TUNING_SEED)[0]}
        jobs.tune_job(PARAMS, name, [TUNING_SEED], weights, tmp_path / "tuning", 1)
    paths = sorted((tmp_path / "tuning").glob("*.json"))
    assert sorted(p.stem for p in paths) == sorted(tuned_methods(PARAMS))
    assert all(read_tuning(p)["tuning_seeds"] == [TUNING_SEED] for p in paths)

    def run(out: Path) -> dict:
        return jobs.run_job(
            PARAMS,
            SEED,
            {name: jobs.reader_paths(trained, name, SEED)[0] for name in PARAMS["readers"]},
            {name: jobs.reader_paths(trained, name, SEED)[1] for name in PARAMS["readers"]},
            selected(paths),
            out,
            1,
        )

    metrics = run(tmp_path / "first.json")
    run(tmp_path / "second.json")
    assert (tmp_path / "first.json").read_bytes() == (tmp_path / "second.json").read_bytes()
    for reader in PARAMS["readers"]:
        channels = metrics["readers"][reader]["channels"]
        assert list(channels) == PARAMS["channels"]
        for channel in channels.values():
            assert list(channel["selectors"]) == PARAMS["selectors"]
            for cells in channel["selectors"].values():
                assert list(cells) == [str(k) for k in PARAMS["ks"]]
            assert set(channel["scatter"]) == {"top_k", "theory"}
