"""The bilevel_ht_tune_method job at ci scale: its record, its selection rule, and the run
job's use of the selected step sizes."""

from __future__ import annotations

import copy
import math
from pathlib import Path

import pytest

from reprolab.core.io import read_json
from reprolab.core.tuning import read_tuning, selected
from reprolab.studies.bilevel_ht.jobs import run_job
from reprolab.studies.bilevel_ht.tune import metric_name, tune_method, tuning_noises

SEEDS = [1000]


@pytest.fixture(scope="module")
def records(ci_params, tmp_path_factory) -> dict[str, Path]:
    """Every method tuned once at ci scale: {method: record path}."""
    folder = tmp_path_factory.mktemp("tuning")
    paths = {method: folder / f"{method}.json" for method in ci_params["methods"]}
    for method, path in paths.items():
        tune_method(ci_params, method, SEEDS, path)
    return paths


def test_the_record_holds_every_grid_point_and_selects_the_lowest_mean_final_f(records, ci_params):
    for method, path in records.items():
        record = read_tuning(path)
        grid = ci_params["tune"]["grid"][method]["eta_scale"]
        assert record["method"] == method and record["goal"] == "min"
        assert record["tuning_seeds"] == SEEDS
        assert record["grid"] == {"eta_scale": [float(v) for v in grid]}
        assert [t["values"]["eta_scale"] for t in record["trials"]] == grid
        finite = [t["score"] for t in record["trials"] if t["score"] is not None]  # NaN: null
        assert record["score"] == min(finite)
        assert record["selected"]["eta_scale"] in grid
        assert record["setting"]["topology"] == ci_params["tune"]["topology"]
        assert record["setting"]["iterations"] == ci_params["optim"]["iterations"]
        assert record["metric"] == metric_name(ci_params, method)
        # the score of a point on a seed is the mean final F over the tuning noises
        for trial in record["trials"]:
            run = next(r for r in record["runs"] if r["values"] == trial["values"])
            finals = [f for by_noise in run["final_F"].values() for f in by_noise.values()]
            if None in finals:
                assert trial["score"] is None
            else:
                assert math.isclose(trial["score"], sum(finals) / len(finals))


def test_dsgd_gtuned_is_tuned_on_the_gaussian_control_only(records, ci_params):
    assert tuning_noises(ci_params, "dsgd_gtuned") == ["gaussian"]
    assert read_tuning(records["dsgd_gtuned"])["setting"]["noises"] == ["gaussian"]
    assert read_tuning(records["dsgd"])["setting"]["noises"] == list(ci_params["noises"])
    assert "noise gaussian;" in read_tuning(records["dsgd_gtuned"])["metric"]


def test_a_step_that_diverges_once_is_never_selected(ci_params, tmp_path):
    """D-SGD at 1e4 x its base step diverges under every noise: the smaller step wins even
    though the large one comes first in the grid."""
    params = copy.deepcopy(ci_params)
    params["tune"]["grid"] = {m: {"eta_scale": [10000.0, 1.0]} for m in params["methods"]}
    record = tune_method(params, "dsgd", SEEDS, tmp_path / "dsgd.json")
    assert math.isnan(record["trials"][0]["score"])
    assert all(at >= 0 for at in record["runs"][0]["diverged_at"]["breast_cancer"].values())
    assert record["selected"] == {"eta_scale": 1.0} and record["on_edge"] == ["eta_scale"]


def test_tuning_is_deterministic(records, ci_params, tmp_path):
    tune_method(ci_params, "dnsvrb", SEEDS, tmp_path / "again.json")
    assert (tmp_path / "again.json").read_bytes() == records["dnsvrb"].read_bytes()


def test_the_run_job_steps_at_the_selected_values(records, ci_params, tmp_path):
    chosen = selected(records.values())
    metrics = run_job(ci_params, list(records.values()), "breast_cancer", "ring", 0, tmp_path)
    assert read_json(tmp_path / "metrics.json")["hyperparameters"] == metrics["hyperparameters"]
    for method, values in ci_params["methods"].items():
        used = metrics["hyperparameters"][method]
        assert used["selected"] == chosen[method]
        assert used["tuning_score"] == read_tuning(records[method])["score"]
        for block, base in values["eta_base"].items():
            assert math.isclose(used["eta"][block], base * chosen[method]["eta_scale"])


def test_the_run_job_needs_a_record_per_method(records, ci_params, tmp_path):
    partial = [path for method, path in records.items() if method != "dstorm"]
    with pytest.raises(ValueError, match=r"no tuning record for method\(s\) \['dstorm'\]"):
        run_job(ci_params, partial, "breast_cancer", "ring", 0, tmp_path)
    twice = [*records.values(), records["dsgd"]]
    with pytest.raises(ValueError, match="a second record of it"):
        run_job(ci_params, twice, "breast_cancer", "ring", 0, tmp_path)


def test_the_run_job_rejects_a_record_tuned_on_another_grid(records, ci_params, tmp_path):
    params = copy.deepcopy(ci_params)
    params["tune"]["grid"]["dnsvrb"]["eta_scale"] = [
        2 * v for v in params["tune"]["grid"]["dnsvrb"]["eta_scale"]
    ]
    with pytest.raises(ValueError, match="stale tuning record of 'dnsvrb'"):
        run_job(params, list(records.values()), "breast_cancer", "ring", 0, tmp_path)
