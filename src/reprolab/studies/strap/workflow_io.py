"""What the strap rules need from the study: the params check, the tuned rows and the files a
job reads for each task.

workflow/rules/strap.smk imports this module, so it imports nothing heavy (no scipy, torch or
transformers): every snakemake start and every cluster job parses the rule files.

A task (`strap.tasks.<task>`) names a dataset of the video family: its clips are that
dataset's frames folder. Its labels table is `labels` when the task names one (paper scale: a
CSV written from the real dataset's annotation files), else the synthetic dataset's
manifest.csv, which `video_synthesize` writes with the columns a labels table needs. The rule
file passes both path patterns, so the paths it reads stay written in it (dvc-export finds a
study's preprocessing families there).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reprolab.core.tuning import check_equal_grids

ROWS = ("probe", "spatial_all", "temporal_all", "st_adapter", "aim", "strap", "strap_reversed")
"""The table's adapter rows (the oracle row is the best of the b-sweep, not a placement)."""
TUNED = ("probe", "spatial_all", "temporal_all", "st_adapter", "aim", "strap")
"""The rows with a learning-rate grid; the reversed placement and the b-sweep take STRAP's."""
SWEEP_ENDS = ("temporal_all", "spatial_all")
"""The rows that are STRAP's placement at b = 0 and b = L: the sweep's ends (own rates)."""


def check_params(params: Mapping[str, Any]) -> None:
    """Checks the schema cannot express: known rows, a grid per tuned row of equal size, STRAP
    among the rows of both tasks."""
    for key in ("rows", "coarse_rows"):
        unknown = sorted(set(params[key]) - set(ROWS))
        if unknown:
            raise ValueError(f"strap.{key}: unknown row(s) {unknown}; expected {list(ROWS)}")
        if "strap" not in params[key]:
            raise ValueError(f"strap.{key}: must include 'strap' (the claims compare it)")
    for end in SWEEP_ENDS:
        if end not in params["rows"]:
            raise ValueError(f"strap.rows: must include {end!r} (an end of the b-sweep)")
    check_equal_grids(params["tune"]["grid"], tuned_rows(params), "strap.tune.grid")
    claims = params["claims"]
    for key, needed in (("uniform", ("rows", "coarse_rows")), ("parameter_baselines", ("rows",))):
        for where in needed:
            missing = sorted(set(claims[key]) - set(params[where]))
            if missing:
                raise ValueError(f"strap.claims.{key}: {missing} not in strap.{where}")


def tuned_rows(params: Mapping[str, Any]) -> list[str]:
    """The rows that get a tuning job: those of either task that have their own grid."""
    wanted = set(params["rows"]) | set(params["coarse_rows"])
    return [row for row in TUNED if row in wanted]


def task_files(
    params: Mapping[str, Any], video_datasets: Mapping[str, Any], frames: str, manifest: str
) -> dict[str, dict[str, str]]:
    """{task: {"frames": folder, "labels": CSV}} for every task of `strap.tasks`; `frames` and
    `manifest` are the patterns of a dataset's frames folder and manifest (`{dataset}`).

    Raises ValueError naming the key when a task's dataset is not a video dataset, or when a
    real (non-synthetic) dataset is named without a `labels` table.
    """
    files = {}
    for task, spec in params["tasks"].items():
        dataset = spec["dataset"]
        if dataset not in video_datasets:
            raise ValueError(
                f"strap.tasks.{task}.dataset: {dataset!r} is not a dataset of video.datasets "
                f"({sorted(video_datasets)})"
            )
        labels = spec.get("labels")
        if labels is None:
            if "synthetic" not in video_datasets[dataset]:
                raise ValueError(
                    f"strap.tasks.{task}.labels: the real video dataset {dataset!r} needs a "
                    "labels table (CSV with columns video, split, label)"
                )
            labels = manifest.format(dataset=dataset)
        files[task] = {"frames": frames.format(dataset=dataset), "labels": labels}
    return files
