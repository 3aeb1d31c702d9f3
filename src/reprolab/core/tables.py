"""Study tables: rows are methods, each cell is mean ± std over seeds.

A study hands over long-format records (method, column, seed, value); `summarize` aggregates them
with the sample standard deviation (ddof=1, 0 for a single seed) and `write_table` renders the
same summary as CSV, Markdown and LaTeX. Method and column order follow the order given, so the
paper's method and its baselines appear where the study puts them.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from reprolab.core.io import write_csv, write_text


@dataclass(frozen=True)
class Record:
    """One measured value: `method` on `column` for one seed."""

    method: str
    column: str
    seed: int
    value: float


def summarize(
    records: Sequence[Record],
    methods: Sequence[str],
    columns: Sequence[str],
    not_applicable: Collection[tuple[str, str]] = (),
) -> pd.DataFrame:
    """Mean, std and seed count per (method, column); raises if a requested cell has no value,
    unless the (method, column) pair is in `not_applicable`: that cell gets no values (n = 0)
    and is rendered NOT_APPLICABLE."""
    frame = pd.DataFrame([r.__dict__ for r in records])
    rows = []
    for method in methods:
        for column in columns:
            values = frame.loc[(frame.method == method) & (frame.column == column), "value"]
            if values.empty and (method, column) in not_applicable:
                rows.append(
                    {"method": method, "column": column, "mean": np.nan, "std": np.nan, "n": 0}
                )
                continue
            if values.empty:
                raise ValueError(f"table: no values for method '{method}', column '{column}'")
            array = values.to_numpy(dtype=float)
            std = float(np.std(array, ddof=1)) if array.size > 1 else 0.0
            rows.append(
                {
                    "method": method,
                    "column": column,
                    "mean": float(array.mean()),
                    "std": std,
                    "n": int(array.size),
                }
            )
    return pd.DataFrame(rows)


def seed_stats(values: Sequence[float] | np.ndarray) -> dict[str, Any]:
    """Mean, sample std (0 for one seed) and the per-seed values, as metrics.json keeps them."""
    array = np.asarray(values, dtype=float)
    return {
        "mean": array.mean(),
        "std": array.std(ddof=1) if array.size > 1 else 0.0,
        "per_seed": array,
    }


def curve_frame(points: Iterable[tuple[str, float, float]]) -> pd.DataFrame:
    """A study's curves.csv from (series, x, y) points: columns `x,series,y`, rows sorted by
    (series, x), y with six fixed decimals so the file is byte-stable, undefined points
    (a NaN mean) left out rather than written as text a plot cannot draw."""
    return pd.DataFrame(
        [(x, series, f"{y:.6f}") for series, x, y in sorted(points) if np.isfinite(y)],
        columns=["x", "series", "y"],
    )


NOT_APPLICABLE = "—"
"""The cell of a column that does not apply to a row (`summarize`'s `not_applicable`)."""


def format_cell(mean: float, std: float, digits: int) -> str:
    """'mean ± std' with a fixed number of decimals."""
    return f"{mean:.{digits}f} ± {std:.{digits}f}"


def wide_table(summary: pd.DataFrame, digits: int) -> pd.DataFrame:
    """Pivot a summary to rows = methods, columns = metrics, cells 'mean ± std'."""
    methods = list(dict.fromkeys(summary.method))
    columns = list(dict.fromkeys(summary.column))
    cells = {
        (r.method, r.column): format_cell(r.mean, r.std, digits) if r.n else NOT_APPLICABLE
        for r in summary.itertuples()
    }
    return pd.DataFrame(
        [[method] + [cells[(method, c)] for c in columns] for method in methods],
        columns=["method", *columns],
    )


def write_table(summary: pd.DataFrame, out_prefix: str | Path, digits: int, caption: str) -> None:
    """Write `<prefix>.csv`, `.md` and `.tex` from one summary."""
    table = wide_table(summary, digits)
    prefix = Path(out_prefix)
    write_csv(prefix.with_suffix(".csv"), table)
    write_text(prefix.with_suffix(".md"), to_markdown(table))
    write_text(prefix.with_suffix(".tex"), to_latex(table, caption))


def to_markdown(table: pd.DataFrame) -> str:
    """A GitHub-flavoured Markdown table."""
    header = "| " + " | ".join(table.columns) + " |"
    rule = "|" + "|".join("---" for _ in table.columns) + "|"
    body = ["| " + " | ".join(str(v) for v in row) + " |" for row in table.itertuples(index=False)]
    return "\n".join([header, rule, *body]) + "\n"


def _latex_escape(text: str) -> str:
    for char, repl in (
        ("\\", r"\textbackslash{}"),
        ("_", r"\_"),
        ("%", r"\%"),
        ("&", r"\&"),
        ("#", r"\#"),
    ):
        text = text.replace(char, repl)
    return text.replace("±", r"$\pm$")


def to_latex(table: pd.DataFrame, caption: str) -> str:
    """A booktabs LaTeX table (needs \\usepackage{booktabs})."""
    spec = "l" + "c" * (len(table.columns) - 1)
    lines = [
        r"\begin{table}[t]",
        r"\centering",
        rf"\caption{{{_latex_escape(caption)}}}",
        rf"\begin{{tabular}}{{{spec}}}",
        r"\toprule",
        " & ".join(_latex_escape(c) for c in table.columns) + r" \\",
        r"\midrule",
        *[
            " & ".join(_latex_escape(str(v)) for v in row) + r" \\"
            for row in table.itertuples(index=False)
        ],
        r"\bottomrule",
        r"\end{tabular}",
        r"\end{table}",
    ]
    return "\n".join(lines) + "\n"
