"""The `normlift_tune` jobs: choose one method's settings on the tuning scenes.

One job per method with a grid (`tune.grid.<method>`). Every grid point lifts the method on
every tuning scene (the scenes of `tuning_seeds`, drawn like the table's) and scores 3-D mIoU
on the observed Gaussians, the table's first column; `core.tuning.tune` selects the best mean
over the tuning scenes. The back-projection is computed once per scene and shared by the grid
points (it does not depend on them). NormLift's ablation rows take NormLift's selected values
and have no grid.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from threadpoolctl import threadpool_limits

from reprolab.core.determinism import derive_seed, seed_everything
from reprolab.core.tuning import tune, write_tuning
from reprolab.studies.normlift import lifting as lf
from reprolab.studies.normlift.dataset import read_scene
from reprolab.studies.normlift.jobs import STUDY, lift, miou_3d, prepare
from reprolab.studies.normlift.workflow_io import LIMITS

METRIC = "3-D mIoU on the observed Gaussians, mean over the tuning scenes"


def tune_method(
    params: Mapping[str, Any],
    method: str,
    seeds: Sequence[int],
    scene_files: Sequence[str | Path],
    out_path: str | Path,
    threads: int,
) -> dict[str, Any]:
    """Tune `method` over its grid on the scenes of `seeds` (`scene_files`, in the same order)
    and write its record to `out_path`; torch and BLAS run on `threads` threads."""
    seed_everything(derive_seed(seeds[0], STUDY, "tune", method), threads)
    with threadpool_limits(limits=threads):
        record = _tune(params, method, seeds, scene_files)
    write_tuning(out_path, record)
    return record


def _tune(
    params: Mapping[str, Any],
    method: str,
    seeds: Sequence[int],
    scene_files: Sequence[str | Path],
) -> dict[str, Any]:
    if len(seeds) != len(scene_files):
        raise ValueError(
            f"normlift tuning of {method}: {len(seeds)} seeds, {len(scene_files)} scenes"
        )
    weight = float(params["evaluation"]["observed_weight"])
    prepared = {
        int(seed): prepare(read_scene(path), weight)
        for seed, path in zip(seeds, scene_files, strict=True)
    }
    base = dict(params.get(method, {}))

    def evaluate(values: dict[str, Any], seed: int) -> float:
        prep = prepared[seed]
        features = lift(method, {**base, **values}, prep, seed)
        score = miou_3d(lf.query_labels(features, prep.scene.text), prep)
        print(f"tune {method} {values} seed {seed}: 3-D mIoU {score:.4f}")
        return score

    grid = params["tune"]["grid"][method]
    limits = {axis: ends for axis, ends in LIMITS.items() if axis in grid}
    return tune(method, grid, evaluate, seeds, METRIC, "max", limits or None)
