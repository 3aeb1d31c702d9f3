"""ntm's tuning and run jobs end to end at ci scale: records, every row scored, the tuned
rates used, the same batches for every method, byte-identical reruns, bad params refused."""

from __future__ import annotations

import copy

import pytest
import torch

from reprolab.core.io import read_h5, read_json
from reprolab.core.tuning import read_tuning
from reprolab.studies.ntm.jobs import RunContext, nfe, run_job
from reprolab.studies.ntm.tune import tune_method
from reprolab.studies.ntm.workflow_io import TUNED_METHODS, check_params, row_names
from tests.conftest import study_section

pytestmark = pytest.mark.usefixtures("torch_one_thread")


@pytest.fixture(scope="module")
def params() -> dict:
    """The ci-scale section with two-point grids (faster)."""
    section = copy.deepcopy(study_section("ntm", "ci"))
    for grid in section["tune"]["grid"].values():
        grid["lr"] = grid["lr"][:2]
    return section


@pytest.fixture(scope="module")
def tuned(params, tmp_path_factory) -> list[str]:
    folder = tmp_path_factory.mktemp("tuning")
    paths = []
    for method in TUNED_METHODS:
        path = folder / f"{method}.json"
        tune_method(params, method, [1000], path, teacher_files=[str(folder / "fm.json")])
        paths.append(str(path))
    return paths


def test_every_method_is_tuned_on_its_grid_and_cd_reads_the_teacher_rate(params, tuned):
    records = {read_tuning(p)["method"]: read_tuning(p) for p in tuned}
    assert set(records) == set(TUNED_METHODS)
    for method, record in records.items():
        assert [t["values"]["lr"] for t in record["trials"]] == params["tune"]["grid"][method]["lr"]
        assert record["setting"]["dataset"] == params["tune"]["dataset"]
    assert records["cd"]["setting"]["teacher_lr"] == records["fm"]["selected"]["lr"]


def test_a_run_scores_every_row_and_repeats_byte_for_byte(params, tuned, tmp_path):
    run_job(params, tuned, "8gauss", 0, tmp_path / "a", 1)
    run_job(params, tuned, "8gauss", 0, tmp_path / "b", 1)
    for name in ("metrics.json", "samples.h5", "curves.h5"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    metrics = read_json(tmp_path / "a" / "metrics.json")
    names = row_names(params)
    assert set(metrics["rows"]) == set(names.values())
    for key, name in names.items():
        row = metrics["rows"][name]
        assert row["nfe"] == nfe(params, key) and row["swd"] >= 0
        assert 0 <= row["modes_covered"] <= 1 and 0 <= row["in_support"] <= 1
        assert ("trajectory_nll" in row) == (key in ("gauss", "ntm"))
    assert metrics["hyperparameters"]["ntm"] == read_tuning(tuned[3])["selected"]
    assert metrics["log_det_error"] < 1e-8
    samples = read_h5(tmp_path / "a" / "samples.h5")
    assert set(samples) == {*names.values(), "test"}
    curves = read_h5(tmp_path / "a" / "curves.h5")
    assert set(curves) == {"fm", "cd", "gauss", "ntm", "sd"}


def test_a_checkerboard_run_has_no_mode_count(params, tuned, tmp_path):
    run_job(params, tuned, "checker", 1, tmp_path, 1)
    row = read_json(tmp_path / "metrics.json")["rows"]["NTM-4"]
    assert row["modes_covered"] is None and 0 <= row["in_support"] <= 1


def test_every_method_of_a_seed_sees_the_same_batches(params):
    run = RunContext(params, "8gauss", 0)
    first, second = run.batches(), run.batches()
    assert torch.equal(first(8), second(8)) and torch.equal(first(8), second(8))
    other = RunContext(params, "8gauss", 1).batches()
    assert not torch.equal(RunContext(params, "8gauss", 0).batches()(8), other(8))


@pytest.mark.parametrize(
    ("path", "value", "expected"),
    [
        (("times",), [0.0, 0.5, 1.0], "t0 in"),
        (("times",), [0.1, 0.5, 0.9], "exactly 1.0"),
        (("times",), [0.1, 0.6, 0.5, 1.0], "increase"),
        (("transporter",), "glow", "ntm.transporter"),
        (("tune", "dataset"), "moons", "ntm.tune.dataset"),
        (("datasets", "8gauss", "kind"), "moons", "ntm.datasets.8gauss.kind"),
    ],
)
def test_bad_params_are_named(params, path, value, expected):
    bad = copy.deepcopy(params)
    target = bad
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    with pytest.raises(ValueError, match=expected):
        check_params(bad)
