"""The files a strap job reads for each task, named from params (used by workflow/rules/strap.smk).

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
