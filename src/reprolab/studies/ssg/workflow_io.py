"""The files the ssg rules read and write, computed from the study's params.

The rule file names the roots (`data/wsi/`, `data/raw/wsi/`, `results/ssg/runs/`); these
functions turn a dataset spec into the paths of its job, so the rule file holds no logic.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

RUN_FILES = (("metrics", "json"), ("curves", "h5"))


def run_files(runs_root: str, methods: Iterable[str]) -> dict[str, str]:
    """metrics and curves of each method's run of one (dataset, seed) job, as
    Snakemake output patterns with `{dataset}` and `{seed}` wildcards."""
    return {
        f"{kind}_{method}": f"{runs_root}/{{dataset}}/{method}/seed{{seed}}/{kind}.{ext}"
        for method in methods
        for kind, ext in RUN_FILES
    }


def wsi_paths(spec: Mapping[str, Any], wsi_root: str, raw_root: str) -> dict[str, str]:
    """Tile features, slide labels and (synthetic cohorts) ground truth of a wsi dataset;
    `{}` for generated datasets."""
    if spec["generator"] != "wsi":
        return {}
    cohort = spec["cohort"]
    paths = {"features": f"{wsi_root}/{cohort}/features"}
    if spec["labels"]:
        return {**paths, "labels": spec["labels"]}
    raw = f"{raw_root}/{cohort}"
    return {**paths, "labels": f"{raw}/manifest.csv", "truth": f"{raw}/truth"}


def wsi_inputs(spec: Mapping[str, Any], wsi_root: str, raw_root: str) -> dict[str, str]:
    """The workflow-made files among `wsi_paths` (a real cohort's labels CSV is read as is)."""
    paths = wsi_paths(spec, wsi_root, raw_root)
    if spec.get("labels"):
        paths.pop("labels")
    return paths


def report_wsi(datasets: Mapping[str, Any], wsi_root: str, raw_root: str) -> dict[str, str]:
    """Folders the report shows for the first synthetic wsi dataset (tiling QC, ground truth),
    and the files that make it rerun; `{}` when there is none."""
    for spec in datasets.values():
        if spec["generator"] == "wsi" and not spec["labels"]:
            tiles, raw = f"{wsi_root}/{spec['cohort']}", f"{raw_root}/{spec['cohort']}"
            return {
                "dir": tiles,
                "raw": raw,
                "tiles": f"{tiles}/tiles",
                "manifest": f"{raw}/manifest.csv",
            }
    return {}
