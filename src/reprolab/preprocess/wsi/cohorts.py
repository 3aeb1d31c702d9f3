"""Where a cohort's slides are, for the workflow's wsi rules.

A cohort in the `wsi.cohorts` params either has a `synthetic:` spec (its slides are generated
under `data/raw/wsi/<cohort>/slides`, an output of the workflow) or names a folder of real
slides (`slides:`), which the workflow reads as it is: it is not a declared input, so a dry run
never needs it and DVC, not Snakemake, tracks its content.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

RAW_ROOT = "data/raw/wsi"


def slides_dir(cohorts: Mapping[str, Any], cohort: str) -> str:
    """The folder of a cohort's slides: generated under data/raw/wsi, or named by params."""
    return cohorts[cohort].get("slides", f"{RAW_ROOT}/{cohort}/slides")


def generated_slides(cohorts: Mapping[str, Any], cohort: str) -> dict[str, str]:
    """`{"slides": folder}` when the workflow generates the cohort's slides, else `{}`."""
    if "synthetic" in cohorts[cohort]:
        return {"slides": slides_dir(cohorts, cohort)}
    return {}
