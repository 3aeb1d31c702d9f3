"""Render a study's report: execute its papermill template, then convert it to HTML.

The study's design notes (docs/studies/<id>.md) go into the executed notebook as a Markdown
cell after its title cell, so the notebook and the HTML both carry them. When the study's
metrics.json summarizes tuning records (reprolab.core.tuning), a "Tuning" section is appended
to the template before it runs: every study's report draws its tuning curves the same way.
The HTML shows cell outputs and Markdown only: code cells stay in the notebook (report.ipynb),
not in the page.

Papermill stamps start/end times and durations into the notebook and gives the cell it injects a
random id; after execution the timings are removed and cells are numbered, so that the same
results render to the same notebook and HTML bytes. Figures are embedded as PNG, which
matplotlib writes without a date.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from reprolab.core.io import read_json, write_text

_TIMING_KEYS = ("start_time", "end_time", "duration", "exception")
_HEADING = re.compile(r"^(#{1,6})(\s.*)?$")
_FENCE = re.compile(r"^\s{0,3}(`{3,}|~{3,})")
DESIGN_NOTES = "Design notes"


def _make_reproducible(notebook: Any) -> None:
    """Drop timing metadata; number the cells (papermill gives its injected cell a random id)."""
    notebook.metadata.pop("papermill", None)
    for number, cell in enumerate(notebook.cells):
        cell.id = f"cell-{number}"
        cell.metadata.pop("execution", None)
        cell.metadata.pop("papermill", None)
        for key in _TIMING_KEYS:
            cell.metadata.pop(key, None)


def design_notes(doc: str | Path) -> str:
    """The Markdown of a study's design-notes page, nested under the report's title: every
    heading one level down (code fences left alone), the page's own title, when it opens with
    one, headed "Design notes — <title>", and a line naming the file it comes from."""
    path = Path(doc)
    lines = path.read_text(encoding="utf-8").splitlines()
    fence: str | None = None
    title_at: int | None = None
    out = []
    for number, line in enumerate(lines):
        opening = _FENCE.match(line)
        if fence is not None:
            closing = opening and opening.group(1)[0] == fence[0]
            if closing and len(opening.group(1)) >= len(fence):
                fence = None
        elif opening:
            fence = opening.group(1)
        elif heading := _HEADING.match(line):
            level, text = len(heading.group(1)), (heading.group(2) or "").strip()
            if level == 1 and not any(previous.strip() for previous in lines[:number]):
                line, title_at = f"## {DESIGN_NOTES} — {text}", len(out)
            else:
                line = "#" * min(level + 1, 6) + (f" {text}" if text else "")
        out.append(line)
    source = path.name if path.is_absolute() else path.as_posix()
    if title_at is None:
        head, rest = [f"## {DESIGN_NOTES}"], out
    else:
        head, rest = out[: title_at + 1], out[title_at + 1 :]
    origin = ["", f"*The study's design notes, from `{source}`.*"]
    if rest and rest[0].strip():
        origin.append("")
    return "\n".join([*head, *origin, *rest]).strip("\n")


def insert_design_notes(notebook: Any, doc: str | Path) -> None:
    """Insert the design notes as a Markdown cell after the notebook's title cell (its first
    cell when that is Markdown opening with a level-1 heading), else at the top."""
    import nbformat

    cell = nbformat.v4.new_markdown_cell(design_notes(doc))
    cells = notebook.cells
    titled = bool(cells) and cells[0].cell_type == "markdown" and _title(cells[0]) is not None
    cells.insert(1 if titled else 0, cell)


TUNING_SECTION = (
    "## Tuning\n\n"
    "Every tuned value was chosen by the study's `<id>_tune` rule on the tuning seeds, which no "
    "table shows: per method the mean score of each grid point, the selected one circled. A "
    "winner on the edge of a numeric axis is named in its panel's title (the grid should widen)."
)
TUNING_CODE = (
    "import json as _json\n"
    "from pathlib import Path as _Path\n\n"
    "import matplotlib.pyplot as _plt\n\n"
    "from reprolab.core.tuning import plot_tuning\n\n"
    "plot_tuning(_json.loads((_Path(results_dir) / 'metrics.json').read_text())['tuning'])\n"
    "_plt.show()"
)


def add_tuning_section(notebook: Any) -> None:
    """Append the tuning section (a Markdown cell and the cell that draws the curves from
    metrics.json's `tuning` entry) to a report template."""
    import nbformat

    notebook.cells += [
        nbformat.v4.new_markdown_cell(TUNING_SECTION),
        nbformat.v4.new_code_cell(TUNING_CODE),
    ]


def _has_tuning(parameters: dict[str, Any], cwd: str | Path) -> bool:
    """Whether the study's metrics.json (under `results_dir`) carries a tuning summary."""
    metrics = Path(cwd) / str(parameters.get("results_dir", "")) / "metrics.json"
    return metrics.is_file() and "tuning" in read_json(metrics)


def _title(cell: Any) -> str | None:
    """The text of a Markdown cell's opening level-1 heading, if it has one."""
    first = cell.source.lstrip("\n").split("\n", 1)[0]
    return first[2:].strip() if first.startswith("# ") else None


def render_report(
    template: str | Path,
    notebook_out: str | Path,
    html_out: str | Path,
    parameters: dict[str, Any],
    cwd: str | Path = ".",
    doc: str | Path | None = None,
) -> None:
    """Execute `template` with `parameters` into `notebook_out` and write its HTML to `html_out`.

    `doc`, the study's design notes (docs/studies/<id>.md), is inserted after the title in both;
    the tuning section is appended when the study has tuning records. The HTML hides the code
    cells' input; the notebook keeps it."""
    import nbformat
    import papermill
    from nbconvert import HTMLExporter

    notebook = nbformat.read(str(template), as_version=4)
    if _has_tuning(parameters, cwd):
        add_tuning_section(notebook)
    executed = papermill.execute_notebook(
        notebook,
        None,
        parameters=parameters,
        cwd=str(cwd),
        progress_bar=False,
        kernel_name="python3",
        log_output=False,
    )
    if doc is not None:
        insert_design_notes(executed, doc)
    _make_reproducible(executed)
    write_text(notebook_out, nbformat.writes(executed) + "\n")
    title = next(
        (t for c in executed.cells if c.cell_type == "markdown" and (t := _title(c))), None
    )
    resources = {"metadata": {"name": title}} if title else None
    html, _ = HTMLExporter(
        exclude_input=True, exclude_input_prompt=True, exclude_output_prompt=True
    ).from_notebook_node(executed, resources=resources)
    write_text(html_out, html)
