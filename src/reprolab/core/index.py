"""results/index.html: every study's table and claim checks on one page."""

from __future__ import annotations

import html
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from reprolab.core.io import read_json, write_text
from reprolab.core.layout import results_dir

_STYLE = """
body { font-family: sans-serif; max-width: 70em; margin: 2em auto; color: #222; }
table { border-collapse: collapse; margin: 0.5em 0 1em; }
td, th { border: 1px solid #bbb; padding: 0.25em 0.6em; text-align: left; }
th { background: #eee; }
.holds { color: #176b2c; font-weight: bold; }
.fails { color: #a4161a; font-weight: bold; }
"""


def _claim_row(claim: dict) -> str:
    """One table row: a paired test with its numbers, or a check (no test) with its rule."""
    verdict = "holds" if claim["holds"] else "fails"
    if "p_value" in claim:
        cells = [
            html.escape(claim["statement"]),
            html.escape(claim["metric"]),
            html.escape(" vs ".join(claim["methods"])),
            f"{claim['mean_difference']:+.4g}",
            html.escape(claim["wins"]),
            html.escape(claim["test"]),
            f"{claim['p_value']:.3g}",
        ]
    else:
        rule = html.escape(claim.get("rule", ""))
        cells = [html.escape(claim["statement"]), html.escape(claim.get("kind", "check"))]
        cells += ["", "", "", rule, ""]
    body = "".join(f"<td>{cell}</td>" for cell in cells)
    return f"<tr>{body}<td class='{verdict}'>{verdict}</td></tr>"


def _claims_html(claims: list[dict]) -> str:
    rows = [_claim_row(claim) for claim in claims]
    head = (
        "<tr><th>claim</th><th>metric</th><th>compared</th><th>mean diff</th><th>wins</th>"
        "<th>test</th><th>p</th><th>verdict</th></tr>"
    )
    return "<table>" + head + "".join(rows) + "</table>"


def study_section(study: str) -> str:
    """One study's heading, table, claim checks and a link to its report."""
    root = results_dir(study)
    table = pd.read_csv(root / "table.csv")
    claims = read_json(root / "claims.json")
    held = sum(c["holds"] for c in claims["claims"])
    return (
        f"<h2 id='{study}'>{study}</h2>"
        f"<p>{held}/{len(claims['claims'])} claims hold at this scale. "
        f"<a href='{study}/report.html'>Report</a> · <a href='{study}/claims.json'>claims.json</a>"
        f" · <a href='{study}/provenance.json'>provenance</a></p>"
        + table.to_html(index=False, border=0, escape=True)
        + _claims_html(claims["claims"])
    )


def write_index(studies: Sequence[str], scale: str, out: str | Path) -> None:
    """Write the index page for `studies` (their contract files must exist)."""
    toc = " · ".join(f"<a href='#{s}'>{s}</a>" for s in studies)
    body = "".join(study_section(s) for s in studies)
    page = (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>reprolab results</title>"
        f"<style>{_STYLE}</style></head><body><h1>reprolab results</h1>"
        f"<p>Scale: <b>{html.escape(scale)}</b>. Studies: {toc}</p>{body}</body></html>\n"
    )
    write_text(out, page)
