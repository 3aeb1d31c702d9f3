"""The files the nicer rules read, computed from the study's params.

The rule file names the roots (`data/wsi/`, `data/raw/wsi/`); these functions turn the dataset
spec into paths, so the rule file holds no logic.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


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
