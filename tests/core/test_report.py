from pathlib import Path

import nbformat

from reprolab.core.report import render_report


def template(path: Path) -> Path:
    nb = nbformat.v4.new_notebook()
    params = nbformat.v4.new_code_cell("value = 1")
    params.metadata["tags"] = ["parameters"]
    nb.cells = [params, nbformat.v4.new_code_cell("print(value * 2)")]
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    nbformat.write(nb, path)
    return path


def test_report_is_parameterised_and_byte_reproducible(tmp_path: Path):
    src = template(tmp_path / "t.ipynb")
    render_report(src, tmp_path / "a.ipynb", tmp_path / "a.html", {"value": 21})
    render_report(src, tmp_path / "b.ipynb", tmp_path / "b.html", {"value": 21})
    assert "42" in (tmp_path / "a.html").read_text()
    assert (tmp_path / "a.ipynb").read_bytes() == (tmp_path / "b.ipynb").read_bytes()
    assert (tmp_path / "a.html").read_bytes() == (tmp_path / "b.html").read_bytes()
    executed = nbformat.read(tmp_path / "a.ipynb", as_version=4)
    assert "papermill" not in executed.metadata
