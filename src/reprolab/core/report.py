"""Render a study's report: execute its papermill template, then convert it to HTML.

Papermill stamps start/end times and durations into the notebook and gives the cell it injects a
random id; after execution the timings are removed and cells are numbered, so that the same
results render to the same notebook and HTML bytes. Figures are embedded as PNG, which
matplotlib writes without a date.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from reprolab.core.io import write_text

_TIMING_KEYS = ("start_time", "end_time", "duration", "exception")


def _make_reproducible(notebook: Any) -> None:
    """Drop timing metadata; number the cells (papermill gives its injected cell a random id)."""
    notebook.metadata.pop("papermill", None)
    for number, cell in enumerate(notebook.cells):
        cell.id = f"cell-{number}"
        cell.metadata.pop("execution", None)
        cell.metadata.pop("papermill", None)
        for key in _TIMING_KEYS:
            cell.metadata.pop(key, None)


def render_report(
    template: str | Path,
    notebook_out: str | Path,
    html_out: str | Path,
    parameters: dict[str, Any],
    cwd: str | Path = ".",
) -> None:
    """Execute `template` with `parameters` into `notebook_out` and write its HTML to `html_out`."""
    import nbformat
    import papermill
    from nbconvert import HTMLExporter

    executed = papermill.execute_notebook(
        str(template),
        None,
        parameters=parameters,
        cwd=str(cwd),
        progress_bar=False,
        kernel_name="python3",
        log_output=False,
    )
    _make_reproducible(executed)
    write_text(notebook_out, nbformat.writes(executed) + "\n")
    html, _ = HTMLExporter(
        exclude_input_prompt=True, exclude_output_prompt=True
    ).from_notebook_node(executed)
    write_text(html_out, html)
