"""What the ssg rules need from the study: the datasets and runs the params plan, and the files
the rules read and write.

workflow/rules/ssg.smk imports this module, so it imports nothing heavy (no scipy, torch or
transformers): every snakemake start and every cluster job parses the rule files. `datasets`
lists every dataset a run needs (the table's datasets and the sweep's grid) and `run_plan`
every (dataset, method) pair; the summary (`results`) reads the runs of the same plan. The rule
file names the roots (`data/wsi/`, `data/raw/wsi/`, `results/ssg/runs/`); the other functions
turn a dataset spec into the paths of its job, so the rule file holds no logic.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

RUN_FILES = (("metrics", "json"), ("curves", "h5"))


def sweep_name(witness_rate: float, heterogeneity: float) -> str:
    """Dataset name of one sweep cell, e.g. ``sweep_w0.03_h0.5``."""
    return f"sweep_w{witness_rate:g}_h{heterogeneity:g}"


def sweep_cells(params: dict[str, Any]) -> list[tuple[float, float, str, dict]]:
    """(witness rate, heterogeneity, dataset name, spec) per sweep cell.

    A cell is the sweep's base dataset with witness rate and heterogeneity replaced; when that
    spec equals a table dataset the cell reuses the table's runs under the table's name.
    """
    sweep = params.get("sweep")
    if not sweep:
        return []
    base = params["datasets"][sweep["base"]]
    cells = []
    for w in sweep["witness_rate"]:
        for h in sweep["heterogeneity"]:
            spec = {**base, "witness_rate": w, "heterogeneity": h}
            same = [name for name, other in params["datasets"].items() if other == spec]
            cells.append((w, h, same[0] if same else sweep_name(w, h), spec))
    return cells


def datasets(params: dict[str, Any]) -> dict[str, dict]:
    """Every dataset spec a run needs: the table's datasets, then the new sweep cells."""
    return {**params["datasets"], **{name: spec for _, _, name, spec in sweep_cells(params)}}


def run_plan(params: dict[str, Any]) -> list[tuple[str, str]]:
    """Every (dataset, method) pair to train, without repeats: all methods on the table's
    datasets, the sweep's methods on sweep cells."""
    plan = [(d, m) for d in params["datasets"] for m in params["methods"]]
    sweep_methods = params["sweep"]["methods"] if params.get("sweep") else []
    for _, _, name, _ in sweep_cells(params):
        plan += [(name, m) for m in sweep_methods if (name, m) not in plan]
    return plan


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
