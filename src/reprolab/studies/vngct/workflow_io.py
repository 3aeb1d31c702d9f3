"""What the vngct rules need from the study: the params checks and the files of the run and
tuning record whose routing a method copies.

workflow/rules/vngct.smk imports this module, so it imports nothing heavy (no scipy, torch or
transformers): every snakemake start and every cluster job parses the rule files.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reprolab.core.tuning import check_equal_grids
from reprolab.studies.vngct.spec import MATCHED


def check_tune(params: Mapping[str, Any]) -> None:
    """What the schema cannot say about `tune`: a grid for every listed method, every grid of
    the same number of points, train and validation fractions that fit in one split.
    ValueError naming the key."""
    tuning = params["tune"]
    check_equal_grids(tuning["grid"], params["methods"], "vngct.tune.grid")
    if tuning["train_fraction"] + tuning["validation_fraction"] > 1:
        raise ValueError(
            "vngct.tune: train_fraction + validation_fraction exceed the training split"
        )


def check_params(params: dict[str, Any], streams: dict[str, Any]) -> None:
    """Reject what the schema (studies/vngct.schema.yaml) cannot: `stream` must be an entry of
    `instr.streams`, a method whose routing copies another's (`MATCHED`) needs that method
    listed too, and the tuning grids must be alike (`check_tune`). ValueError naming the
    key. Types, ranges, known methods and the keys of
    `training` and `lora` are the schema's, checked by core.params.check_config."""
    if params["stream"] not in streams:
        raise ValueError(
            f"vngct.stream: {params['stream']!r} is not an instr.streams entry "
            f"(known: {', '.join(sorted(streams))})"
        )
    for method, source in MATCHED.items():
        if method in params["methods"] and source not in params["methods"]:
            raise ValueError(f"vngct.methods: {method} matches {source}'s routing; list {source}")
    check_tune(params)


def matched_run(method: str, seed: int, runs_dir: str) -> dict[str, str]:
    """`{"matched": metrics.json}` of the run whose routing rates `method` copies, else `{}`."""
    if method in MATCHED:
        return {"matched": f"{runs_dir}/{MATCHED[method]}/seed{seed}/metrics.json"}
    return {}


def matched_tuning(method: str, tuning_dir: str = "data/vngct/tuning") -> dict[str, str]:
    """`{"matched": tuning record}` of the method whose routing rates `method` copies, else
    `{}`."""
    if method in MATCHED:
        return {"matched": f"{tuning_dir}/{MATCHED[method]}.json"}
    return {}
