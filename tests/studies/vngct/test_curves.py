"""curves.csv of vngct: accuracy over the tasks seen so far after each task, per method."""

import numpy as np

from reprolab.studies.vngct.metrics import average_accuracy, final_accuracy
from reprolab.studies.vngct.results import curve_rows


def seed_run(matrix: list[list[float]]) -> dict:
    return {"accuracy": {"all": matrix, "visual": matrix, "text": matrix}}


def test_rows_average_the_seen_tasks_and_the_seeds():
    seqft = [[[0.8, 0.1, 0.0], [0.4, 0.9, 0.2], [0.2, 0.5, 0.9]]]
    vngct = [[[0.6, 0.0, 0.0], [0.6, 0.8, 0.0], [0.5, 0.7, 0.6]],
             [[1.0, 0.0, 0.0], [0.8, 0.6, 0.0], [0.7, 0.5, 0.9]]]  # fmt: skip
    runs = {"vngct": [seed_run(m) for m in vngct], "seqft": [seed_run(m) for m in seqft]}
    frame = curve_rows({"methods": list(runs)}, runs, [0, 1])
    assert frame.values.tolist() == [
        [1, "seqft", "0.800000"],
        [2, "seqft", "0.650000"],
        [3, "seqft", "0.533333"],
        [1, "vngct", "0.800000"],
        [2, "vngct", "0.700000"],
        [3, "vngct", "0.650000"],
    ]
    # the curve's mean is the table's average accuracy, its last point the final accuracy
    seqft_y = frame[frame.series == "seqft"].y.astype(float)
    assert np.isclose(seqft_y.mean(), average_accuracy(np.asarray(seqft[0])), atol=1e-6)
    assert np.isclose(seqft_y.iloc[-1], final_accuracy(np.asarray(seqft[0])), atol=1e-6)
