"""curves.csv of bilevel_ht: F against iteration, mean over the seeds that did not diverge."""

import json
from pathlib import Path

import numpy as np

from reprolab.core.io import write_h5
from reprolab.studies.bilevel_ht.results import curve_rows, load_curves

NAN = np.nan


def job(f: list[list[list[float]]], diverged_at: list[list[int]]) -> dict:
    """One seed's curves: F [noise, method, checkpoint] at iterations 0, 10, 20."""
    return {
        "iter": np.array([0, 10, 20]),
        "F": np.asarray(f, dtype=float),
        "diverged_at": np.asarray(diverged_at),
        "noises": ["gaussian", "pareto"],
        "methods": ["dsgd", "dnsvrb"],
    }


def seeds() -> list[dict]:
    # noise x method x checkpoint; dsgd diverges under pareto in seed 1 and in seed 0.
    first = job(
        [[[0.7, 0.5, 0.4], [0.7, 0.6, 0.5]], [[0.7, NAN, NAN], [0.7, 0.5, 0.3]]],
        [[-1, -1], [5, -1]],
    )
    second = job(
        [[[0.7, 0.3, 0.2], [0.7, 0.4, 0.3]], [[0.7, 0.9, NAN], [0.7, 0.3, 0.1]]],
        [[-1, -1], [15, -1]],
    )
    return [first, second]


def test_diverged_seeds_are_left_out_and_rows_sorted():
    params = {"datasets": {"toy": {}}}
    rows = curve_rows(params, {"curves": {"toy": {"ring": seeds()}}}, [0, 1]).values.tolist()
    assert rows == [
        [0, "ring/gaussian/dnsvrb", "0.700000"],
        [10, "ring/gaussian/dnsvrb", "0.500000"],
        [20, "ring/gaussian/dnsvrb", "0.400000"],
        [0, "ring/gaussian/dsgd", "0.700000"],
        [10, "ring/gaussian/dsgd", "0.400000"],
        [20, "ring/gaussian/dsgd", "0.300000"],
        [0, "ring/pareto/dnsvrb", "0.700000"],
        [10, "ring/pareto/dnsvrb", "0.400000"],
        [20, "ring/pareto/dnsvrb", "0.200000"],
    ]  # ring/pareto/dsgd diverged in every seed: no rows


def test_dataset_prefix_with_several_datasets_and_files_read_back(tmp_path: Path):
    for seed, curves in enumerate(seeds()):
        names = {key: json.dumps(curves.pop(key)) for key in ("noises", "methods")}
        write_h5(tmp_path / f"b/exponential/seed{seed}/curves.h5", curves, attrs=names)
    params = {"datasets": {"a": {}, "b": {}}, "topologies": ["exponential"]}
    loaded = load_curves({**params, "datasets": {"b": {}}}, [0, 1], tmp_path)
    series = set(curve_rows(params, {"curves": loaded}, [0, 1]).series)
    assert series == {
        "b/exponential/gaussian/dnsvrb",
        "b/exponential/gaussian/dsgd",
        "b/exponential/pareto/dnsvrb",
    }
