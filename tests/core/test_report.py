import re
from pathlib import Path

import nbformat
import pytest

from reprolab.core.report import design_notes, render_report

DOC = """# toy: a toy study

## The paper's question

Whether doubling works (DOC_SENTENCE).

```text
# not a heading inside a fence
```
"""


def template(path: Path) -> Path:
    nb = nbformat.v4.new_notebook()
    title = nbformat.v4.new_markdown_cell("# Toy — reproduction report\n\nWhat follows.")
    params = nbformat.v4.new_code_cell("value = 1")
    params.metadata["tags"] = ["parameters"]
    code = nbformat.v4.new_code_cell("hidden_marker = 'CODE_MARKER'\nprint(value * 2)")
    nb.cells = [title, params, code]
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(nb, path)
    return path


@pytest.fixture(scope="module")
def rendered(tmp_path_factory) -> Path:
    """The template rendered twice with the same parameters and design notes."""
    out = tmp_path_factory.mktemp("report")
    src = template(out / "t.ipynb")
    (out / "toy.md").write_text(DOC)
    for name in ("a", "b"):
        render_report(
            src, out / f"{name}.ipynb", out / f"{name}.html", {"value": 21}, doc=out / "toy.md"
        )
    return out


def test_report_is_parameterised_and_byte_reproducible(rendered: Path):
    assert "42" in (rendered / "a.html").read_text()
    assert (rendered / "a.ipynb").read_bytes() == (rendered / "b.ipynb").read_bytes()
    assert (rendered / "a.html").read_bytes() == (rendered / "b.html").read_bytes()
    executed = nbformat.read(rendered / "a.ipynb", as_version=4)
    assert "papermill" not in executed.metadata


def test_code_cells_stay_in_the_notebook_not_in_the_html(rendered: Path):
    html = (rendered / "a.html").read_text()
    assert "CODE_MARKER" not in html and "value = 21" not in html
    executed = nbformat.read(rendered / "a.ipynb", as_version=4)
    sources = [cell.source for cell in executed.cells if cell.cell_type == "code"]
    assert any("CODE_MARKER" in source for source in sources)
    assert any("value = 21" in source for source in sources)  # papermill's injected parameters
    assert "<title>Toy — reproduction report</title>" in html


def test_the_design_notes_follow_the_title_in_notebook_and_html(rendered: Path):
    executed = nbformat.read(rendered / "a.ipynb", as_version=4)
    title, notes = executed.cells[0], executed.cells[1]
    assert title.source.startswith("# Toy — reproduction report")
    assert notes.cell_type == "markdown" and "DOC_SENTENCE" in notes.source
    html = (rendered / "a.html").read_text()
    assert "DOC_SENTENCE" in html
    title_at = re.search(r"<h1[^>]*>Toy — reproduction report", html).start()
    notes_at = re.search(r"<h2[^>]*>Design notes — toy: a toy study", html).start()
    output_at = re.search(r"<pre>42\s*</pre>", html).start()
    assert title_at < notes_at < html.index("DOC_SENTENCE") < output_at
    assert re.search(r"<h3[^>]*>The paper(&#39;|')s question", html)


def test_design_notes_nest_the_page_under_the_report_title(tmp_path: Path):
    doc = tmp_path / "toy.md"
    doc.write_text(DOC)
    lines = design_notes(doc).splitlines()
    assert lines[0] == "## Design notes — toy: a toy study"
    assert "*The study's design notes, from `toy.md`.*" in lines
    assert "### The paper's question" in lines
    assert "# not a heading inside a fence" in lines
    doc.write_text("Only prose.\n\n# A late heading\n")
    lines = design_notes(doc).splitlines()
    assert lines[0] == "## Design notes" and "## A late heading" in lines


def test_a_study_with_tuning_records_gets_the_tuning_section(tmp_path: Path):
    from reprolab.core.io import write_json
    from reprolab.core.tuning import tune, tuning_summary, write_tuning

    record = tune("m", {"lr": [0.01, 0.1, 1.0]}, lambda v, s: -abs(v["lr"] - 0.1), [7], "f", "max")
    write_tuning(tmp_path / "m.json", record)
    results = tmp_path / "results"
    write_json(results / "metrics.json", {"tuning": tuning_summary([tmp_path / "m.json"])})
    src = template(tmp_path / "t.ipynb")
    render_report(
        src, tmp_path / "r.ipynb", tmp_path / "r.html", {"value": 1, "results_dir": "results"},
        cwd=tmp_path,
    )  # fmt: skip
    notebook = nbformat.read(tmp_path / "r.ipynb", as_version=4)
    assert notebook.cells[-2].source.startswith("## Tuning")
    assert any(o.get("output_type") == "display_data" for o in notebook.cells[-1].outputs)
    write_json(results / "metrics.json", {})
    render_report(
        src,
        tmp_path / "s.ipynb",
        tmp_path / "s.html",
        {"value": 1, "results_dir": "results"},
        cwd=tmp_path,
    )
    assert "## Tuning" not in (tmp_path / "s.html").read_text()
