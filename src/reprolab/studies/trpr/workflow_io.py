"""What the trpr rules need from the study: the params check, the rows that get a tuning job,
and the kind of each benchmark.

workflow/rules/trpr.smk imports this module, so it imports nothing heavy (no torch or
transformers): every snakemake start and every cluster job parses the rule files.

A benchmark (`trpr.benchmarks.<name>`) is DigitStyles (`digitstyles`: the images are generated
by the `trpr_data` job) or one of the paper's released datasets (a `root` folder the data job
reads with studies.trpr.benchmarks). The backbone is the tiny ViT that `trpr_pretrain`
pre-trains on DigitStyles' pre-training images (`backbone.checkpoint: null`) or a saved folder.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from reprolab.core.tuning import check_equal_grids
from reprolab.studies.trpr.methods import METHODS

ROWS = tuple(METHODS)
"""Every row the study can train (studies.trpr.methods.METHODS)."""
UNTUNED = tuple(row for row in ROWS if METHODS[row].knob is None)
"""Rows with nothing to tune (NCM trains nothing)."""
RATE_SOURCE = "moe"
"""The row whose tuned learning rate the rows tuning another knob train at (Method.knob)."""
SYNTHETIC = "digitstyles"
"""The benchmark the workflow generates; every other benchmark is read from its `root`."""
TRPR_ROWS = ("trpr_card", "trpr_inference")
"""The method's two variants; the claims compare each with the strongest baseline."""


def tuned_rows(params: Mapping[str, Any]) -> list[str]:
    """The rows that get a tuning job per benchmark: every row but those in UNTUNED."""
    return [row for row in params["rows"] if row not in UNTUNED]


def rate_source(row: str) -> str | None:
    """The row whose tuned learning rate `row` trains at (RATE_SOURCE), None when `row` tunes
    its own rate or trains nothing."""
    return RATE_SOURCE if METHODS[row].knob not in (None, "lr") else None


def check_params(params: Mapping[str, Any]) -> None:
    """Checks the schema cannot express: known rows with both TRPR variants and a baseline,
    equal grids for the tuned rows, a DigitStyles benchmark to pre-train on when no checkpoint
    is named, and claim baselines among the rows."""
    rows = list(params["rows"])
    unknown = sorted(set(rows) - set(ROWS))
    if unknown:
        raise ValueError(f"trpr.rows: unknown row(s) {unknown}; expected some of {list(ROWS)}")
    missing = [row for row in TRPR_ROWS if row not in rows]
    if missing:
        raise ValueError(f"trpr.rows: must include {missing} (the claims compare them)")
    baselines = list(params["claims"]["baselines"])
    stray = sorted(set(baselines) - set(rows) | set(baselines) & set(TRPR_ROWS))
    if stray or not baselines:
        raise ValueError(
            f"trpr.claims.baselines: {stray or baselines} must be rows of trpr.rows other than "
            f"{list(TRPR_ROWS)}, at least one"
        )
    drifting = params["claims"]["drift_row"]
    if drifting not in rows or not METHODS[drifting].routes:
        raise ValueError(
            f"trpr.claims.drift_row: {drifting!r} must be a row of trpr.rows with a router"
        )
    check_equal_grids(params["tune"]["grid"], tuned_rows(params), "trpr.tune.grid")
    for row in tuned_rows(params):
        knob = METHODS[row].knob
        if list(params["tune"]["grid"][row]) != [knob]:
            raise ValueError(
                f"trpr.tune.grid.{row}: tunes {sorted(params['tune']['grid'][row])}; the row "
                f"tunes {knob!r} alone (studies.trpr.methods.Method.knob)"
            )
    borrowing = [row for row in tuned_rows(params) if rate_source(row)]
    if borrowing and RATE_SOURCE not in rows:
        raise ValueError(
            f"trpr.rows: {borrowing} train at the learning rate tuned for {RATE_SOURCE!r}: "
            "include it"
        )
    if params["backbone"]["checkpoint"] is None and SYNTHETIC not in params["benchmarks"]:
        raise ValueError(
            f"trpr.backbone.checkpoint: null pre-trains the backbone on the {SYNTHETIC!r} "
            "benchmark, which trpr.benchmarks lacks: name a checkpoint folder or add it"
        )
    for name, spec in params["benchmarks"].items():
        if (name == SYNTHETIC) == ("root" in spec):
            raise ValueError(
                f"trpr.benchmarks.{name}: {SYNTHETIC} is generated (no root); every other "
                "benchmark needs the `root` folder of its release"
            )
