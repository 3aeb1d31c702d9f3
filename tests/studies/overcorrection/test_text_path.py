"""The paper scale's pretrained readers end to end on a tiny Llama folder reading a small SST-2
written in GLUE's format: tuning on the training file's held-out queries, a run file with every
channel, selector and k, written byte-identically twice, with the network refused."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from reprolab.core.params import study_params
from reprolab.core.tuning import read_tuning, selected
from reprolab.studies.overcorrection import jobs
from reprolab.studies.overcorrection.text_path import load_text_reader, read_source
from reprolab.studies.overcorrection.workflow_io import check_params, tuned_methods
from tests.studies.overcorrection.fixtures import save_tiny_lm
from tests.studies.overcorrection.test_workflow_io import CONFIG

GOOD, BAD = ("great", "fun", "moving", "clever"), ("dull", "awful", "flat", "boring")
NOUNS = ("film", "plot", "cast", "story", "ending")
WORDS = [*GOOD, *BAD, *NOUNS, "the", "was", "Review", "Sentiment", ":", "positive", "negative"]
TUNING_SEED, SEED = 1000, 0

pytestmark = pytest.mark.usefixtures("torch_one_thread")


def write_sst2(path: Path, count: int, offset: int) -> Path:
    """A GLUE SST-2 file of `count` sentences "the <noun> was <adjective>"."""
    pairs = itertools.islice(itertools.cycle(itertools.product(NOUNS, GOOD + BAD)), offset, None)
    lines = ["sentence\tlabel"]
    for noun, adjective in itertools.islice(pairs, count):
        lines.append(f"the {noun} was {adjective}\t{int(adjective in GOOD)}")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def params(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("text")
    model = save_tiny_lm(root / "model", "llama", WORDS)
    base = study_params({**CONFIG, "scale": "ci"}, "overcorrection")
    return {
        **base,
        "readers": {"tiny_sst2": {"kind": "pretrained", "folder": str(model), "set": "sst2"}},
        "sets": {
            "sst2": {
                "format": "sst2",
                "train": str(write_sst2(root / "train.tsv", 40, 0)),
                "test": str(write_sst2(root / "dev.tsv", 12, 3)),
                "input": "Review:",
                "answer": "Sentiment:",
            }
        },
        "text": {
            "queries": 4,
            "tuning_share": 0.25,
            "embedding": 8,
            "device": "cpu",
            "dtype": "float32",
        },
        "calibration": {"prompts": 3},
        "tune": {**base["tune"], "queries": 3},
    }


def test_the_params_pass_the_checks_and_a_missing_set_is_named(params):
    check_params(params)
    with pytest.raises(ValueError, match="set 'sst5' is not in overcorrection.sets"):
        check_params(
            {**params, "readers": {"x": {**params["readers"]["tiny_sst2"], "set": "sst5"}}}
        )


def test_a_malformed_line_is_logged_and_the_rest_is_read(params, tmp_path, caplog):
    test = tmp_path / "dev.tsv"
    test.write_text(Path(params["sets"]["sst2"]["test"]).read_text() + "a plot\tseven\n")
    sets = {"sst2": {**params["sets"]["sst2"], "test": str(test)}}
    with caplog.at_level("WARNING"):
        source = read_source({**params, "sets": sets}, "sst2")
    assert len(source.test_ids) == 12
    assert f"{test}: 1 lines skipped: dev.tsv:14:" in caplog.text


def test_tuning_seeds_read_held_out_training_queries_and_runs_the_test_file(params):
    reader, source = load_text_reader(params, "tiny_sst2")
    assert source.table.demonstrations == 30 and len(source.tuning_ids) == 10
    _, tuning, _ = jobs.seed_queries(params, reader, TUNING_SEED, 3, source, tuning=True)
    _, evaluation, _ = jobs.seed_queries(params, reader, SEED, 4, source)
    assert {int(t.x_query[0]) for t in tuning.trials} <= set(source.tuning_ids)
    assert {int(t.x_query[0]) for t in evaluation.trials} <= set(source.test_ids)
    for trial in evaluation.trials:
        assert int(trial.x.max()) < source.table.demonstrations


def test_tuning_then_run_write_every_record_and_cell_byte_identically(
    params, tmp_path: Path, no_network
):
    jobs.tune_job(params, "tiny_sst2", [TUNING_SEED], {}, tmp_path / "tuning", 1)
    paths = sorted((tmp_path / "tuning").glob("*.json"))
    assert sorted(p.stem for p in paths) == sorted(tuned_methods(params))
    assert all(read_tuning(p)["tuning_seeds"] == [TUNING_SEED] for p in paths)
    first = tmp_path / "first.json"
    out = jobs.run_job(params, SEED, {}, {}, selected(paths), first, 1)
    jobs.run_job(params, SEED, {}, {}, selected(paths), tmp_path / "again.json", 1)
    assert first.read_bytes() == (tmp_path / "again.json").read_bytes()
    entry = out["readers"]["tiny_sst2"]
    assert "training" not in entry and len(entry["calibration"]["etas"]) == 4
    for channel in params["channels"]:
        cells = entry["channels"][channel]["selectors"]
        assert list(cells) == list(params["selectors"])
        for selector, by_k in cells.items():
            assert list(by_k) == [str(k) for k in params["ks"]]
            for cell in by_k.values():
                assert 0 <= cell["over"] <= 1 and np.isfinite(cell["mse"]), (channel, selector)
        if channel != "memory":  # answers on the simplex with a one-hot truth: kappa <= 1
            assert all(cell["over"] == 0 for by_k in cells.values() for cell in by_k.values())
