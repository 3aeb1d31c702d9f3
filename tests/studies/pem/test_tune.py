"""The pem_tune job at ci scale: the record, the selection, diverging trials, PEM-batch's tie to
PEM's β, and run jobs that use the selected values and nothing else."""

import copy
import math

import numpy as np
import pytest

from reprolab.core.io import read_json
from reprolab.core.tuning import read_tuning, tune, write_tuning
from reprolab.studies.pem import tune as tune_module
from reprolab.studies.pem.jobs import batch_config, run_job, tuned_params
from reprolab.studies.pem.tune import evaluate, metric, tune_method

from .conftest import section


def small(methods=("pem", "nsm")) -> dict:
    """The ci section cut down to one source setting and a few methods (seconds)."""
    params = copy.deepcopy(section("ci"))
    params["methods"] = list(methods)
    params["sources"] = {"box_r07": params["sources"]["box_r07"]}
    return params


def record(method: str, values: dict) -> dict:
    """A tuning record that selects `values` (one trial)."""
    return tune(method, {k: [v] for k, v in values.items()}, lambda v, s: 1.0, [1000], "m", "max")


def test_the_record_keeps_every_trial_and_selects_the_best_mean(tmp_path):
    params = small()
    out = tune_method(params, "nsm", [1000, 1001], tmp_path / "nsm.json")
    saved = read_tuning(tmp_path / "nsm.json")
    grid = params["tune"]["grid"]["nsm"]
    assert saved["method"] == "nsm" and saved["tuning_seeds"] == [1000, 1001]
    assert saved["metric"] == metric(params) == "mean SINR (dB) over the source settings at 30 dB"
    assert len(saved["trials"]) == len(grid["lr"]) * len(grid["lr_decay_epochs"])
    assert all(len(t["per_seed"]) == 2 for t in saved["trials"])
    best = max(saved["trials"], key=lambda t: t["score"])
    assert saved["selected"] == best["values"] == out["selected"]
    # a trial's score on one seed is the method's SINR on that seed's tuning problem
    trial = saved["trials"][0]
    assert trial["per_seed"][0] == pytest.approx(evaluate("nsm", trial["values"], 1000, params))


def test_a_diverging_point_scores_nan_and_is_never_selected(tmp_path, monkeypatch):
    """A linear-algebra failure or non-finite outputs on a source make the trial NaN."""
    real = tune_module.run_method

    def fragile(method, problem, domain, params, rng):
        lr = params[method]["lr"]
        if lr == 3.0:
            raise np.linalg.LinAlgError("Eigenvalues did not converge")
        if lr == 1.0:
            return {"sinr": math.nan}
        return real(method, problem, domain, params, rng)

    monkeypatch.setattr(tune_module, "run_method", fragile)
    params = small(("pem", "corinfomax"))
    params["tune"]["grid"]["corinfomax"] = {"lr": [3.0, 1.0, 0.3], "forget": [0.99]}
    saved = tune_method(params, "corinfomax", [1000], tmp_path / "c.json")
    scores = [t["score"] for t in saved["trials"]]
    assert math.isnan(scores[0]) and math.isnan(scores[1]) and math.isfinite(scores[2])
    assert saved["selected"] == {"lr": 0.3, "forget": 0.99}
    assert saved["on_edge"] == ["lr"]  # the grid's smallest lr: a reader is told


def test_pem_batch_is_tuned_at_pems_selected_beta(tmp_path):
    params = small(("pem", "pem_batch", "nsm"))
    with pytest.raises(ValueError, match=r"needs the tuning records of \['pem'\]"):
        tune_method(params, "pem_batch", [1000], tmp_path / "pem_batch.json")
    write_tuning(tmp_path / "pem.json", record("pem", {"beta": 1000.0, "lr": 0.002}))
    saved = tune_method(
        params, "pem_batch", [1000], tmp_path / "pem_batch.json", upstream=[tmp_path / "pem.json"]
    )
    assert saved["upstream"] == {"pem": {"beta": 1000.0, "lr": 0.002}}
    tuned, _ = tuned_params(
        params,
        [
            tmp_path / "pem.json",
            tmp_path / "pem_batch.json",
            write_record(tmp_path, "nsm", {"lr": 0.3, "lr_decay_epochs": 20.0}),
        ],
    )
    assert batch_config("pem_batch", tuned).betas == (1000.0,)


def write_record(folder, method, values):
    path = folder / f"{method}.json"
    write_tuning(path, record(method, values))
    return path


def test_a_run_job_uses_the_selected_values_and_needs_every_record(tmp_path):
    params = small()
    pem = write_record(tmp_path, "pem", {"beta": 200.0, "lr": 0.002})
    with pytest.raises(ValueError, match=r"no tuning record for method\(s\) \['nsm'\]"):
        run_job(30.0, 0, params, 1, tmp_path / "run", [pem])
    runs = {}
    for lr in (0.1, 1.0):
        nsm = write_record(tmp_path, "nsm", {"lr": lr, "lr_decay_epochs": 20.0})
        runs[lr] = run_job(30.0, 0, params, 1, tmp_path / f"run{lr}", [pem, nsm])
    assert runs[0.1]["tuned"] == {
        "pem": {"beta": 200.0, "lr": 0.002},
        "nsm": {"lr": 0.1, "lr_decay_epochs": 20.0},
    }
    assert read_json(tmp_path / "run0.1" / "metrics.json")["tuned"]["nsm"]["lr"] == 0.1
    sinr = {lr: run["sources"]["box_r07"]["nsm"]["sinr"] for lr, run in runs.items()}
    assert sinr[0.1] != sinr[1.0]  # the record's value is the one the job ran
    pem_sinr = {lr: run["sources"]["box_r07"]["pem"]["sinr"] for lr, run in runs.items()}
    assert pem_sinr[0.1] == pem_sinr[1.0]  # and only that method's run changed


def test_a_tuned_value_that_is_no_setting_of_the_method_is_rejected(tmp_path):
    params = small()
    paths = [
        write_record(tmp_path, "pem", {"beta": 200.0, "lr": 0.002}),
        write_record(tmp_path, "nsm", {"lr": 0.1, "momentum": 0.9}),
    ]
    with pytest.raises(ValueError, match=r"\['momentum'\] are not settings of nsm"):
        tuned_params(params, paths)
