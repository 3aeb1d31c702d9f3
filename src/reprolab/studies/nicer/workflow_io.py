"""What the nicer rules need from the study: the params check and the files they read.

workflow/rules/nicer.smk imports this module, so it imports nothing heavy (no scipy, torch or
transformers): every snakemake start and every cluster job parses the rule files. The rule file
names the roots (`data/wsi/`, `data/raw/wsi/`); these functions turn the dataset spec into
paths, so the rule file holds no logic.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reprolab.studies.nicer.rows import ROWS


def check_params(params: Mapping[str, Any]) -> None:
    """Reject a nicer section whose rows, budgets or grids do not fit together (before any job
    starts; the schema has checked the types)."""
    unknown = sorted(set(params["rows"]) - set(ROWS))
    if unknown:
        raise ValueError(f"nicer.rows: unknown rows {unknown}; expected some of {list(ROWS)}")
    for key in ("prior", "ablations"):
        stray = sorted(set(params[key]) - set(params["rows"]))
        if stray:
            raise ValueError(f"nicer.{key}: {stray} are not in nicer.rows")
    if "nicer" not in params["rows"] or not params["prior"]:
        raise ValueError("nicer.rows must hold 'nicer' and nicer.prior at least one condenser")
    if params["budget"] not in params["budgets"]:
        raise ValueError(
            f"nicer.budget={params['budget']} must be one of nicer.budgets {params['budgets']}"
        )
    missing = sorted(set(params["rows"]) - set(params["tune"]["grid"]))
    if missing:
        raise ValueError(f"nicer.tune.grid: no grid for rows {missing}")


def cohort_paths(dataset: Mapping[str, Any], wsi_root: str, raw_root: str) -> dict[str, str]:
    """Tile features and slide labels of the dataset (a real cohort's labels CSV is also a
    declared paper input, core.paper_data), and for a synthetic cohort (no `labels`) the
    slides folder its report draws from."""
    cohort = dataset["cohort"]
    paths = {"features": f"{wsi_root}/{cohort}/features"}
    if dataset.get("labels"):
        return {**paths, "labels": dataset["labels"]}
    raw = f"{raw_root}/{cohort}"
    return {**paths, "labels": f"{raw}/manifest.csv", "slides": f"{raw}/slides"}
