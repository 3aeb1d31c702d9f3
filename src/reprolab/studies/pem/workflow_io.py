"""What the pem rules need from the study: the params check, the tuning order and the run
folders' names.

workflow/rules/pem.smk imports this module, so it imports nothing heavy (no scipy, torch or
transformers): every snakemake start and every cluster job parses the rule files. The configs
come from the numpy-only modules of the methods.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any

from reprolab.core.tuning import grid_points
from reprolab.studies.pem import baselines
from reprolab.studies.pem.batch import BatchConfig
from reprolab.studies.pem.pem import OnlineConfig

CONFIGS = {
    "pem": OnlineConfig,
    "pem_batch": BatchConfig,
    "detmax": BatchConfig,
    "corinfomax": baselines.CorInfoMaxConfig,
    "nsm": baselines.NSMConfig,
    "fastica": baselines.FastICAConfig,
}
"""Each method's config: its fields are the keys of its params section and grid together
(PEM-batch's `betas` excepted: it is online PEM's β)."""
TUNE_DEPENDS = {"pem_batch": ("pem",)}
"""Tuned values a method's tuning reads: PEM-batch solves online PEM's objective, so it uses
PEM's selected β and is tuned after it."""


def snr_key(snr_db: float) -> str:
    """The folder name of a noise level: snr30, snr15, snr7.5."""
    return f"snr{float(snr_db):g}"


def _categorical(values: Sequence[Any]) -> bool:
    return all(isinstance(v, str | bool) for v in values)


def config_fields(method: str) -> list[str]:
    """The keys a method's config needs: its section and its grid set them together."""
    fields = [f.name for f in dataclasses.fields(CONFIGS[method])]
    return [f for f in fields if not (method == "pem_batch" and f == "betas")]


def check_params(params: Mapping[str, Any]) -> None:
    """Reject tuning settings the schema cannot judge; the message names the key.

    Every listed method has a grid, and every key of its config is set either by its params
    section or by its grid, never by both (a tuned value is only ever the tuning's); every grid
    has as many points as PEM's (the same tuning budget), except a grid of categorical axes
    only, which may be smaller when it is the method's whole choice space (FastICA's contrast ×
    algorithm).
    """
    grids = params["tune"]["grid"]
    missing = [m for m in params["methods"] if m not in grids]
    if missing:
        raise ValueError(f"pem.tune.grid: no grid for method(s) {missing}")
    budget = len(grid_points(grids["pem"]))
    for method in params["methods"]:
        fixed, tuned = set(params[method]), set(grids[method])
        both = sorted(fixed & tuned)
        if both:
            raise ValueError(
                f"pem.{method}: {both} also on the tuning grid (tune.grid.{method}); a tuned "
                "value is set by the tuning only"
            )
        unset = [f for f in config_fields(method) if f not in fixed | tuned]
        if unset:
            raise ValueError(
                f"pem.{method}: no value for {unset}: set it there or tune it (tune.grid.{method})"
            )
        points = len(grid_points(grids[method]))
        categorical = all(_categorical(values) for values in grids[method].values())
        if points != budget and not (categorical and points < budget):
            raise ValueError(
                f"pem.tune.grid.{method}: {points} grid points, PEM's grid has {budget}; every "
                "method gets the same tuning budget (a grid of categorical axes only may be "
                "smaller)"
            )
