from pathlib import Path

import pandas as pd

from reprolab.core.claims import claims_document, paired_check
from reprolab.core.index import write_index
from reprolab.core.io import write_json


def test_index_shows_tables_and_verdicts(tmp_path: Path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    root = tmp_path / "results" / "toy"
    root.mkdir(parents=True)
    pd.DataFrame({"method": ["a", "b"], "acc": ["1.00 ± 0.00", "0.50 ± 0.10"]}).to_csv(
        root / "table.csv", index=False
    )
    checks = [
        paired_check("a beats b", "acc", "a", "b", [1, 1, 1], [0.4, 0.5, 0.6], [0, 1, 2]),
        paired_check("b beats a", "acc", "b", "a", [0.4, 0.5, 0.6], [1, 1, 1], [0, 1, 2]),
        {
            "statement": "oracle is perfect",
            "kind": "benchmark check",
            "rule": "every seed 100 %",
            "holds": True,
        },
    ]
    write_json(root / "claims.json", claims_document("toy", checks, "rule"))
    write_index(["toy"], "ci", tmp_path / "results/index.html")
    page = (tmp_path / "results/index.html").read_text()
    assert "0.50 ± 0.10" in page and "2/3 claims hold" in page
    assert "<td>benchmark check</td>" in page and "every seed 100 %" in page
    assert "class='holds'" in page and "class='fails'" in page
    assert "toy/report.html" in page
