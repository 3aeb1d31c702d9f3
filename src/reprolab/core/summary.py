"""A study's summary: the one results interface every study implements, and the files written
from it (table.{csv,md,tex}, claims.json, metrics.json, curves.csv).

Each study's `reprolab.studies.<id>.results` module provides the functions of `StudyResults`,
all with the argument order (params, runs, seeds): it reads its runs and says what its table,
claims, metrics and curves are; `summarize_study` writes them the same way for every study.
The summary imports no torch or transformers: a study's results module reads run files only.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import pandas as pd

from reprolab.core.claims import claims_document
from reprolab.core.fragility import FRAGILITY, study_digest
from reprolab.core.io import read_json, write_csv, write_json
from reprolab.core.layout import CURVES, results_dir
from reprolab.core.schemas import validate_claims
from reprolab.core.tables import Record, summarize, write_table
from reprolab.core.tuning import tuning_summary

Params = dict[str, Any]


@dataclass(frozen=True)
class Table:
    """A study's table: long-format records, the row (method) and column order, a caption, and
    the (method, column) cells that do not apply (no records; shown as a dash)."""

    records: list[Record]
    methods: list[str]
    columns: list[str]
    caption: str
    not_applicable: frozenset[tuple[str, str]] = frozenset()


@runtime_checkable
class StudyResults(Protocol):
    """What `reprolab.studies.<id>.results` provides (module-level names)."""

    NOTES: str
    """How the claims are tested, for claims.json: the pass rules fixed before the run."""

    def load_runs(self, params: Params, seeds: Sequence[int], runs_dir: Path) -> Any:
        """Read the run files under `runs_dir` (results/<id>/runs) into the study's own form."""

    def table(self, params: Params, runs: Any, seeds: Sequence[int]) -> Table:
        """The table: one record per (method, column, seed)."""

    def claim_checks(self, params: Params, runs: Any, seeds: Sequence[int]) -> list[dict]:
        """The claim checks (reprolab.core.claims), in the order the abstract states them."""

    def study_metrics(self, params: Params, runs: Any, seeds: Sequence[int]) -> dict[str, Any]:
        """metrics.json: the numbers behind the table and claims, seed statistics."""

    def curve_rows(self, params: Params, runs: Any, seeds: Sequence[int]) -> pd.DataFrame:
        """curves.csv (`x,series,y`, see core.tables.curve_frame): the study's learning curve."""


def results_module(study: str) -> StudyResults:
    """The study's results module, checked against `StudyResults`."""
    module = importlib.import_module(f"reprolab.studies.{study}.results")
    missing = [
        name
        for name in ("NOTES", "load_runs", "table", "claim_checks", "study_metrics", "curve_rows")
        if not hasattr(module, name)
    ]
    if missing:
        raise TypeError(
            f"reprolab.studies.{study}.results lacks {missing} of the results interface "
            "(reprolab.core.summary.StudyResults)"
        )
    return module  # type: ignore[return-value]


def summarize_study(
    study: str,
    params: Params,
    seeds: Sequence[int],
    out_dir: str | Path | None = None,
    tuning_files: Sequence[str | Path] = (),
) -> None:
    """Write table.{csv,md,tex}, claims.json (validated against the claims schema),
    metrics.json (with `claims_holding`, sanity checks aside, and the summary of the study's
    tuning records `tuning_files`, core.tuning) and curves.csv of `study`, reading its runs
    from `<out_dir>/runs` (out_dir defaults to results/<id>) and marking fragile checks from
    `<out_dir>/fragility.json` when there is one (core.fragility)."""
    results = results_module(study)
    out = Path(out_dir) if out_dir is not None else results_dir(study)
    seeds = list(seeds)
    runs = results.load_runs(params, seeds, out / "runs")
    table = results.table(params, runs, seeds)
    summary = summarize(table.records, table.methods, table.columns, table.not_applicable)
    write_table(summary, out / "table", digits=int(params["table_digits"]), caption=table.caption)
    fragility_file = out / FRAGILITY
    claims = claims_document(
        study,
        results.claim_checks(params, runs, seeds),
        results.NOTES,
        fragility=read_json(fragility_file) if fragility_file.is_file() else None,
        digest=study_digest(params, seeds),
    )
    validate_claims(claims, f"{study}: claims.json")
    write_json(out / "claims.json", claims)
    metrics = results.study_metrics(params, runs, seeds)
    metrics["claims_holding"] = f"{claims['claims_holding']}/{claims['claims_counted']}"
    if tuning_files:
        metrics["tuning"] = tuning_summary(tuning_files)
    write_json(out / "metrics.json", metrics)
    write_csv(out / CURVES, results.curve_rows(params, runs, seeds))
