"""curves.csv of ndfa: test accuracy (%) against epoch, one series per task/method."""

from pathlib import Path

import numpy as np
import pandas as pd

from reprolab.core.io import write_csv, write_h5, write_json
from reprolab.studies.ndfa.results import curve_rows, load_runs


def run(accuracy: list[float]) -> dict[str, np.ndarray]:
    return {
        "epoch": np.arange(1, len(accuracy) + 1),
        "test_accuracy": np.asarray(accuracy),
        "train_loss": np.zeros(len(accuracy)),
    }


def test_rows_are_seed_means_sorted_by_series_then_epoch():
    curves = {
        "toy": {
            "ndfa": [run([0.5, 0.7]), run([0.6, 0.9])],
            "dfa": [run([0.4, 0.5]), run([0.4, 0.6])],
        }
    }
    params = {"tasks": {"toy": {}}, "methods": ["ndfa", "dfa"]}
    frame = curve_rows(params, {"curves": curves}, [0, 1])
    assert list(frame.columns) == ["x", "series", "y"]
    assert frame.values.tolist() == [
        [1, "toy/dfa", "40.000000"],
        [2, "toy/dfa", "55.000000"],
        [1, "toy/ndfa", "55.000000"],
        [2, "toy/ndfa", "80.000000"],
    ]


def test_written_file_from_run_files(tmp_path: Path):
    for seed, acc in enumerate([[0.25, 0.5], [0.75, 1.0]]):
        write_h5(tmp_path / f"runs/toy/bp/seed{seed}/curves.h5", run(acc))
        write_json(tmp_path / f"runs/toy/bp/seed{seed}/metrics.json", {"test_accuracy": acc[-1]})
    params = {"tasks": {"toy": {}}, "methods": ["bp"]}
    runs = load_runs(params, [0, 1], tmp_path / "runs")
    assert runs["metrics"]["toy"]["bp"][1] == {"test_accuracy": 1.0}
    write_csv(tmp_path / "curves.csv", curve_rows(params, runs, [0, 1]))
    text = (tmp_path / "curves.csv").read_text()
    assert text == "x,series,y\n1,toy/bp,50.000000\n2,toy/bp,75.000000\n"
    assert pd.read_csv(tmp_path / "curves.csv").y.tolist() == [50.0, 75.0]
