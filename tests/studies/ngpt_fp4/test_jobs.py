"""The run, mechanism and tuning jobs end to end on a tiny corpus and model: files written,
recipes paired by seed, tuned rate used, reruns byte-identical, bad records refused."""

from __future__ import annotations

import copy

import pytest

from reprolab.core.io import read_json
from reprolab.core.tuning import read_tuning
from reprolab.studies.ngpt_fp4.corpus import write_corpus
from reprolab.studies.ngpt_fp4.jobs import mechanism_job, model_config, run_job
from reprolab.studies.ngpt_fp4.tune import tune_arch
from reprolab.studies.ngpt_fp4.workflow_io import check_params

pytestmark = pytest.mark.usefixtures("torch_one_thread")

TEXT = "The quick brown fox jumps over the lazy dog. " * 200

PARAMS = {
    "corpus": {"val_share": 0.1},
    "architectures": ["gpt", "ngpt"],
    "recipes": ["fp32", "nvfp4", "nvfp4_rht_sr", "nvfp4_static"],
    "static_headroom": 16.0,
    "model": {"hidden": 32, "layers": 1, "heads": 2, "context": 16},
    "train": {"steps": 6, "batch": 2, "weight_decay": 0.1, "log_every": 2, "val_batches": 2},
    "device": "cpu",
    "tune": {"grid": {"gpt": {"lr": [1e-3, 3e-3]}, "ngpt": {"lr": [3e-3, 1e-2]}}},
    "sharpness": {"batches": 1, "iterations": 3},
    "mechanism": {"hiddens": [16, 32], "steps": 3, "pairs": 64, "batch": 2},
}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    path = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    write_corpus(path, TEXT)
    return path


@pytest.fixture(scope="module")
def tuned(corpus, tmp_path_factory):
    folder = tmp_path_factory.mktemp("tuning")
    for arch in PARAMS["architectures"]:
        tune_arch(PARAMS, arch, [1000], corpus, folder / f"{arch}.json")
    return folder


def test_tuning_records_every_grid_point_on_full_precision(tuned):
    record = read_tuning(tuned / "ngpt.json")
    assert record["method"] == "ngpt" and record["setting"]["recipe"] == "fp32"
    assert [t["values"]["lr"] for t in record["trials"]] == [3e-3, 1e-2]
    assert record["selected"]["lr"] in (3e-3, 1e-2)


def test_run_job_trains_every_recipe_at_the_tuned_rate_and_repeats(corpus, tuned, tmp_path):
    first = run_job(PARAMS, "gpt", 0, tuned / "gpt.json", corpus, tmp_path / "a.json")
    run_job(PARAMS, "gpt", 0, tuned / "gpt.json", corpus, tmp_path / "b.json")
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes()
    assert first["lr"] == read_tuning(tuned / "gpt.json")["selected"]["lr"]
    assert list(first["runs"]) == PARAMS["recipes"]
    for run in first["runs"].values():
        assert len(run["losses"]) == 3 and run["val_loss"] > 0 and run["sharpness"] > 0
        assert run["max_gradient"] == max(run["max_gradients"].values())
    # The recipes change the numbers (the quantisers act) but not the batches' seed.
    losses = {recipe: run["val_loss"] for recipe, run in first["runs"].items()}
    assert len(set(losses.values())) == len(losses)
    assert read_json(tmp_path / "a.json")["runs"]["fp32"]["val_loss"] == pytest.approx(
        losses["fp32"]
    )


def test_mechanism_job_measures_every_hidden_size(corpus, tuned, tmp_path):
    out = mechanism_job(PARAMS, "ngpt", 1, tuned / "ngpt.json", corpus, tmp_path / "m.json")
    assert list(out["sizes"]) == ["16", "32"]
    for size in out["sizes"].values():
        assert len(size["layers"]) == 4  # qkv, out, up, down of the one block
        assert set(size) == {"val_loss", "layers", "snr_db", "rho", "rho_noise"}
        assert 5 < size["snr_db"] < 40


def test_the_sweep_keeps_the_head_width(corpus):
    assert model_config(PARAMS, "gpt", 10).heads == 2
    assert model_config(PARAMS, "gpt", 10, hidden=64).heads == 4
    assert model_config(PARAMS, "ngpt", 10, hidden=16).heads == 1
    with pytest.raises(ValueError, match="unknown architecture 'llama'"):
        model_config(PARAMS, "llama", 10)


def test_a_record_of_the_other_architecture_is_refused(corpus, tuned, tmp_path):
    with pytest.raises(ValueError, match="not 'gpt'"):
        run_job(PARAMS, "gpt", 0, tuned / "ngpt.json", corpus, tmp_path / "x.json")
    params = copy.deepcopy(PARAMS)
    params["recipes"] = ["fp32", "fp8"]
    with pytest.raises(ValueError, match="unknown NVFP4 recipe 'fp8'"):
        run_job(params, "gpt", 0, tuned / "gpt.json", corpus, tmp_path / "y.json")


@pytest.mark.parametrize(
    ("key", "value", "message"),
    [
        ("recipes", ["nvfp4"], "needs 'fp32'"),
        ("architectures", ["gpt", "mamba"], "unknown architecture 'mamba'"),
        ("mechanism", {**PARAMS["mechanism"], "hiddens": [24]}, "24 is not a multiple"),
    ],
)
def test_params_that_cannot_run_are_refused_before_training(key, value, message):
    with pytest.raises(ValueError, match=message):
        check_params({**PARAMS, key: value})
