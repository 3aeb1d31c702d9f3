"""curves.csv of ssg: test bag AUC against epoch, one series per table dataset/method."""

from pathlib import Path

import numpy as np

from reprolab.core.io import write_h5, write_json
from reprolab.studies.ssg.results import curve_rows, load_runs


def run(auc: list[float]) -> dict[str, np.ndarray]:
    return {
        "epoch": np.arange(1, len(auc) + 1),
        "train_loss": np.ones(len(auc)),
        "bag_auc": np.asarray(auc),
        "instance_auc": np.full(len(auc), 0.5),
    }


def test_rows_are_seed_means_sorted_and_undefined_points_left_out():
    curves = {
        "sparse": {"ssg_uot": [run([0.6, 0.8]), run([0.7, 0.9])]},
        "endo": {"abmil": [run([np.nan, 0.75]), run([0.5, 0.25])]},
    }
    assert curve_rows({}, {"curves": curves}, [0, 1]).values.tolist() == [
        [2, "endo/abmil", "0.500000"],
        [1, "sparse/ssg_uot", "0.650000"],
        [2, "sparse/ssg_uot", "0.850000"],
    ]


def test_only_the_table_datasets_are_read(tmp_path: Path):
    metrics = {"bag_auc": 0.5, "bag_accuracy": 0.5, "instance_auc": 0.5}
    for seed in (0, 1):
        write_h5(tmp_path / f"sparse/abmil/seed{seed}/curves.h5", run([0.5 + 0.1 * seed]))
        for dataset in ("sparse", "sweep_w0.2_h1"):  # the sweep cell has metrics, no curves
            write_json(tmp_path / f"{dataset}/abmil/seed{seed}/metrics.json", metrics)
    sweep = {"base": "sparse", "methods": ["abmil"], "witness_rate": [0.2], "heterogeneity": [1]}
    params = {"datasets": {"sparse": {}}, "methods": ["abmil"], "sweep": sweep}
    runs = load_runs(params, [0, 1], tmp_path)
    assert list(runs["metrics"]) == ["sparse", "sweep_w0.2_h1"]
    assert list(runs["curves"]) == ["sparse"]
    frame = curve_rows(params, runs, [0, 1])
    assert frame.values.tolist() == [[1, "sparse/abmil", "0.550000"]]
