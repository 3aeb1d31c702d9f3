from __future__ import annotations

import dataclasses
import math
from html.parser import HTMLParser
from pathlib import Path

import pytest

from reprolab.core.claims import (
    bound_check,
    claims_document,
    count_check,
    paired_check,
    sanity_check,
    tolerance_check,
)
from reprolab.core.index import scoreboard, write_index
from reprolab.core.io import write_json, write_text
from reprolab.core.layout import CONTRACT_FILES, load_papers
from reprolab.core.schemas import validate_claims

SEEDS = [0, 1, 2, 3]


class Tables(HTMLParser):
    """Every <table> of a page: its class, whether a `scroll` box holds it, and its rows, each
    a (row class, [(cell tag, cell class, cell text, [hrefs])])."""

    def __init__(self) -> None:
        super().__init__()
        self.tables: list[dict] = []
        self.divs: list[str] = []
        self.cell: list | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "div":
            self.divs.append(attrs.get("class") or "")
        elif tag == "table":
            scrolls = bool(self.divs) and self.divs[-1] == "scroll"
            self.tables.append({"class": attrs.get("class"), "scroll": scrolls, "rows": []})
        elif tag == "tr":
            self.tables[-1]["rows"].append((attrs.get("class"), []))
        elif tag in ("td", "th"):
            self.cell = [tag, attrs.get("class"), "", []]
            self.tables[-1]["rows"][-1][1].append(self.cell)
        elif tag == "a" and self.cell is not None:
            self.cell[3].append(attrs["href"])
        elif tag in ("li", "br") and self.cell is not None:
            self.cell[2] += "\n"

    def handle_endtag(self, tag):
        if tag == "div":
            self.divs.pop()
        elif tag in ("td", "th"):
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell[2] += data


def tables(page: str) -> dict[str, dict]:
    parser = Tables()
    parser.feed(page)
    return {
        t["class"] + (str(i) if t["class"] == "data" else ""): t
        for i, t in enumerate(parser.tables)
    }


def body_rows(table: dict) -> list[tuple[str | None, list]]:
    return [row for row in table["rows"] if not all(cell[0] == "th" for cell in row[1])]


def checks() -> list[dict]:
    """One check of every kind (and a paired one with a diverged seed), as a study writes."""
    return [
        paired_check(
            "a beats b",
            "acc",
            "a",
            "b",
            [0.9, 0.8, 0.85, 0.95],
            [0.5, 0.6, 0.55, 0.5],
            SEEDS,
        ),
        paired_check(
            "a is within 0.1 of c",
            "acc",
            "a",
            "c",
            [0.9, 0.8, 0.85, 0.95],
            [0.95, 0.9, 0.9, 1.0],
            SEEDS,
            margin=0.1,
        ),
        paired_check(
            "a beats d <even> when d diverges & all",
            "acc",
            "a",
            "d",
            [0.9, 0.8, 0.85, 0.95],
            [0.5, math.nan, 0.5, 0.5],
            SEEDS,
        ),
        count_check(
            "a never diverges",
            "runs",
            {"diverged": 0, "finished": 12},
            {"diverged": ("at_most", 0), "finished": ("at_least", 10)},
        ),
        tolerance_check("rate matches theory", "slope", {"n=8": 0.49, "n=16": 0.62}, 0.5, 0.05),
        bound_check(
            "error stays small",
            "error",
            {"digits": 0.012, "teacher": 0.034},
            "at_most",
            0.05,
            details={"worst_seed": 3},
        ),
        sanity_check("oracle is exact", "error", "oracle error = 0 on every seed", True),
        sanity_check(
            "bound holds",
            "gap",
            "lower ≤ value ≤ upper on every run",
            False,
            details={"runs": 40, "violations": [7]},
        ),
    ]


def build(study: str, document: dict | None = None, skip: str | None = None) -> dict:
    """Write the contract files of `study` under results/ (the cwd); return its claims."""
    root = Path("results") / study
    document = document or claims_document(study, checks(), "Paired checks: one-sided t-tests.")
    validate_claims(document, "test")
    for name in CONTRACT_FILES:
        if name != skip:
            write_text(root / name, "placeholder\n")
    write_text(
        root / "table.csv", "method,acc,a very long column name\na,0.88 ± 0.06,1\nb,0.54 ± 0.05,2\n"
    )
    write_json(root / "claims.json", document)
    return document


@pytest.fixture
def page(tmp_path: Path, monkeypatch) -> str:
    monkeypatch.chdir(tmp_path)
    build("pem")
    build("ndfa", skip="report.html")  # listed but incomplete: not built
    build("ssg")  # complete but not listed: not built
    write_index(["ndfa", "pem"], "smoke", "results/index.html")
    return Path("results/index.html").read_text()


def test_scoreboard_lists_every_paper_in_order_with_its_status(page: str):
    papers = load_papers()
    assert len(papers.papers) == 19
    board = tables(page)["scoreboard"]
    rows = body_rows(board)
    assert [row[1][0][2] for row in rows] == [str(p.number) for p in papers.papers]
    for paper, (_, cells) in zip(papers.papers, rows, strict=True):
        assert paper.id in cells[1][2] and paper.title in cells[1][2]
        assert cells[2][2] == ("built" if paper.id == "pem" else "not yet"), paper.id
    assert "1 of 19 papers built" in page


def test_a_built_row_has_its_counts_smoke_time_and_links(page: str):
    document = claims_document("pem", checks(), "x")
    rows = {cells[1][2].split()[0]: cells for _, cells in body_rows(tables(page)["scoreboard"])}
    pem = rows["pem"]
    claims = pem[3][2]
    assert f"{document['claims_holding']} of {document['claims_counted']}" in claims
    assert document["claims_counted"] == 6 and "+2 sanity" in claims and "1 fails" in claims
    assert pem[4][2] == f"{load_papers().smoke_minutes['pem']:g}"
    assert pem[5][3] == ["pem/report.html", "pem/table.csv", "pem/claims.json"]
    assert "#pem" in pem[1][3]
    for study in ("ndfa", "ssg", "norm_enforcement"):
        assert rows[study][5][3] == [] and rows[study][3][2] == "—"
    assert "2 cores" in page and "last refresh of dvc.lock" in page


def test_a_paper_without_a_measured_smoke_time_shows_a_dash():
    papers = load_papers()
    unmeasured = dataclasses.replace(papers.papers[0], smoke_minutes=None)
    board = scoreboard(dataclasses.replace(papers, papers=(unmeasured, *papers.papers[1:])), {})
    rows = body_rows(tables(f"<html><body>{board}</body></html>")["scoreboard"])
    assert rows[0][1][4][2] == "—"
    assert rows[1][1][4][2] == f"{papers.papers[1].smoke_minutes:g}"


def test_a_study_section_shows_its_table_and_every_kind_with_rule_and_numbers(page: str):
    found = tables(page)
    assert "id='pem'" in page and "id='ndfa'" not in page and "id='ssg'" not in page
    data = [t for name, t in found.items() if name.startswith("data")]
    assert len(data) == 1 and [c[2] for c in data[0]["rows"][1][1]] == ["a", "0.88 ± 0.06", "1"]
    document = claims_document("pem", checks(), "x")
    rows = body_rows(found["claims"])
    assert len(rows) == len(document["claims"])
    for check, (row_class, cells) in zip(document["claims"], rows, strict=True):
        number, claim, kind, rule, evidence, verdict = (cell[2] for cell in cells)
        assert check["statement"] in claim and check["metric"] in claim
        assert check["rule"]["text"] == rule
        assert verdict == ("holds" if check["holds"] else "fails")
        assert evidence.strip(), check["statement"]
        if check["kind"] == "sanity":
            assert kind == "sanity (not counted)" and row_class == "sanity"
        else:
            assert kind == check["kind"] and row_class is None
    paired, margin, diverged, count, tolerance, bound, exact, spectral = (
        cells[4][2] for _, cells in rows
    )
    first = document["claims"][0]
    for text in (
        "a vs b",
        f"{first['mean_difference']:+.4g}",
        f"[{first['effect_size']['ci_low']:+.4g}, {first['effect_size']['ci_high']:+.4g}]",
        "wins 4/4",
        f"p = {first['p_value']:.3g} (raw), {first['p_adjusted']:.3g} (Holm)",
    ):
        assert text in paired, text
    assert first["p_adjusted"] > first["p_value"]  # Holm over three paired checks
    assert "margin 0.1" in margin and "a vs c" in margin
    assert "missing" in diverged and "no finite value on seed(s) [1]" in diverged
    assert "diverged = 0 (limit ≤ 0) ✓" in count and "finished = 12 (limit ≥ 10) ✓" in count
    assert "target 0.5 ± 0.05" in tolerance
    assert "n=8 = 0.49 ✓" in tolerance and "n=16 = 0.62 ✗" in tolerance
    assert "bound ≤ 0.05" in bound and "digits = 0.012 ✓" in bound and "worst_seed: 3" in bound
    assert "checked directly" in exact
    assert "runs: 40" in spectral and "violations: [7]" in spectral


def test_no_cell_of_any_table_is_empty(page: str):
    for name, table in tables(page).items():
        for _, cells in table["rows"]:
            for cell in cells:
                assert cell[2].strip(), (name, cells)


def test_wide_tables_scroll_inside_their_box(page: str):
    found = tables(page)
    assert {"scoreboard", "claims"} <= set(found)
    assert all(table["scroll"] for table in found.values())
    assert ".scroll { overflow-x: auto;" in page


def test_text_is_escaped(page: str):
    assert "a beats d &lt;even&gt; when d diverges &amp; all" in page
    assert "<even>" not in page


def test_same_inputs_give_the_same_bytes(page: str, tmp_path: Path):
    write_index(["pem", "ndfa"], "smoke", "again.html")
    assert Path("again.html").read_text() == page
    write_index(["pem"], "ci", "ci.html")
    assert Path("ci.html").read_text() != page


def test_a_study_outside_papers_yaml_or_an_invalid_claims_file_is_refused(
    tmp_path: Path, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    build("pem")
    with pytest.raises(ValueError, match=r"\['toy'\] are not papers"):
        write_index(["pem", "toy"], "smoke", "index.html")
    write_json("results/pem/claims.json", {"study": "pem", "claims": []})
    with pytest.raises(ValueError, match="results/pem/claims.json"):
        write_index(["pem"], "smoke", "index.html")


def test_papers_yaml_is_checked(tmp_path: Path):
    good = "papers:\n  - {number: 1, id: a, title: A}\n  - {number: 2, id: b, title: B}\n"
    path = tmp_path / "papers.yaml"
    path.write_text(good + "smoke_minutes: {a: 1.5, wsi: 2}\n")
    papers = load_papers(path)
    assert papers.ids() == ["a", "b"] and papers.papers[0].smoke_minutes == 1.5
    assert papers.papers[1].smoke_minutes is None and papers.smoke_minutes["wsi"] == 2.0
    path.write_text(good.replace("number: 2", "number: 3"))
    with pytest.raises(ValueError, match="expected 2"):
        load_papers(path)
    path.write_text(good.replace("id: b", "id: a"))
    with pytest.raises(ValueError, match="more than once"):
        load_papers(path)
