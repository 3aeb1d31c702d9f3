"""results/index.html: a scoreboard of all nineteen papers, then every built study's table and
claim checks, on one static page.

The scoreboard lists every paper of src/reprolab/papers.yaml in the order of its number: built
(in `studies` and its contract files exist) or not yet, its counted claim checks holding as
"k of n" (sanity checks aside), its smoke run time and links to its files. Each built study's
section shows its table and one row per claim check: the rule the check applies and its
evidence, whose content depends on the kind (core.claims). The page is one self-contained file
whose bytes depend only on its inputs: no dates, the papers' order, every text HTML-escaped.
"""

from __future__ import annotations

import csv
import html
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reprolab.core.io import read_json, write_text
from reprolab.core.layout import CONTRACT_FILES, Paper, Papers, load_papers, results_dir
from reprolab.core.schemas import validate_claims

_STYLE = """
body { font-family: system-ui, sans-serif; max-width: 84em; margin: 2em auto; padding: 0 1em;
  color: #222; line-height: 1.4; }
h2 { margin-top: 2em; border-bottom: 1px solid #ccc; }
.scroll { overflow-x: auto; max-width: 100%; margin: 0.5em 0 1em; }
table { border-collapse: collapse; }
td, th { border: 1px solid #bbb; padding: 0.3em 0.6em; text-align: left; vertical-align: top; }
th { background: #eee; }
td.num { text-align: right; white-space: nowrap; }
.data td { white-space: nowrap; }
.claims td.rule { min-width: 12em; max-width: 24em; }
.claims td.claim { min-width: 14em; max-width: 30em; }
ul.evidence { list-style: none; margin: 0; padding: 0; }
ul.evidence li { white-space: nowrap; }
.holds, .built { color: #176b2c; font-weight: bold; }
.fails { color: #a4161a; font-weight: bold; }
tr.sanity td { background: #f5f5f5; color: #555; }
tr.sanity .holds, tr.sanity .fails { font-weight: normal; font-style: italic; }
tr.notyet td { color: #888; }
.muted { color: #666; font-size: 0.9em; }
.note { color: #a4161a; }
"""

_PASS = {True: "✓", False: "✗"}
_SYMBOL = {"at_most": "≤", "at_least": "≥"}
_DASH = "—"


def _e(text: Any) -> str:
    return html.escape(str(text), quote=True)


def _num(value: Any, signed: bool = False) -> str:
    """A number in 4 significant digits; a missing (non-finite) one as 'missing'."""
    if value is None:
        return "missing"
    if isinstance(value, int):  # bool included
        return f"{value:+d}" if signed else str(value)
    return f"{value:+.4g}" if signed else f"{value:.4g}"


def _p(value: float | None) -> str:
    if value is None:
        return _DASH
    return f"{value:.1e}" if 0 < value < 1e-4 else f"{value:.3g}"


def _detail_value(value: Any) -> str:
    if isinstance(value, float | int) and not isinstance(value, bool):
        return _num(value)
    if isinstance(value, list | dict) and not value:
        return "none"
    if isinstance(value, str):
        return value
    return json.dumps(value, sort_keys=True, ensure_ascii=False)


def _items(lines: Sequence[str]) -> str:
    return "<ul class='evidence'>" + "".join(f"<li>{line}</li>" for line in lines) + "</ul>"


def _details(details: Mapping[str, Any]) -> list[str]:
    return [f"{_e(key)}: {_e(_detail_value(value))}" for key, value in details.items()]


def _paired_evidence(check: Mapping[str, Any]) -> list[str]:
    method, baseline = check["methods"]
    rule = check["rule"]
    lines = [f"<b>{_e(method)}</b> vs <b>{_e(baseline)}</b> on {len(check['seeds'])} seeds"]
    effect = check.get("effect_size")
    if check["mean_difference"] is None:
        lines.append(f"mean difference ({_e(method)} − {_e(baseline)}): missing")
    else:
        mean = _num(check["mean_difference"], signed=True)
        diff = f"mean difference ({_e(method)} − {_e(baseline)}): {mean}"
        if effect is not None:
            low, high = _num(effect["ci_low"], signed=True), _num(effect["ci_high"], signed=True)
            diff += f", {effect['confidence']:.0%} CI [{low}, {high}]"
        lines.append(diff)
        if effect is not None and effect.get("cohens_dz") is not None:
            lines.append(f"Cohen's d<sub>z</sub> {_num(effect['cohens_dz'], True)}")
    margin = f" (counted with the margin {_num(rule['margin'])})" if rule.get("margin") else ""
    lines.append(f"wins {_e(check['wins'])}{margin}")
    if check["test"] in ("paired_t", "welch"):
        statistic = check.get("statistic")
        t = "" if statistic is None else f", t = {_num(statistic)}"
        name = "paired t-test" if check["test"] == "paired_t" else "Welch t-test (unpaired)"
        lines.append(f"{name}{t}")
    else:
        lines.append("sign test")  # its statistic is the number of wins
    lines.append(f"p = {_p(check['p_value'])} (raw), {_p(check['p_adjusted'])} (Holm)")
    if check.get("note"):
        lines.append(f"<span class='note'>{_e(check['note'])}</span>")
    return lines


def _count_evidence(check: Mapping[str, Any]) -> list[str]:
    limits = check["rule"]["limits"]
    lines = []
    for name, value in check["counts"].items():
        line = f"{_e(name)} = {_num(value)}"
        for comparison, limit in limits.get(name, {}).items():
            ok = value <= limit if comparison == "at_most" else value >= limit
            line += f" (limit {_SYMBOL[comparison]} {_num(limit)}) {_PASS[ok]}"
        lines.append(line)
    return lines


def _values_evidence(check: Mapping[str, Any]) -> list[str]:
    rule = check["rule"]
    if check["kind"] == "tolerance":
        target, tolerance = rule["target"], rule["tolerance"]
        head = f"target {_num(target)} ± {_num(tolerance)}"

        def ok(v: float) -> bool:
            return abs(v - target) <= tolerance

    else:
        comparison = "at_most" if "at_most" in rule else "at_least"
        bound = rule[comparison]
        head = f"bound {_SYMBOL[comparison]} {_num(bound)}"

        def ok(v: float) -> bool:
            return v <= bound if comparison == "at_most" else v >= bound

    lines = [head]
    for name, value in check["values"].items():
        verdict = _PASS[False] if value is None else _PASS[ok(value)]
        lines.append(f"{_e(name)} = {_num(value)} {verdict}")
    return lines


def evidence(check: Mapping[str, Any]) -> str:
    """The evidence cell of a claim check: its numbers, by kind (never empty)."""
    kind = check["kind"]
    details = check.get("details") or {}
    if kind == "paired":
        lines = _paired_evidence(check)
    elif kind == "count":
        lines = _count_evidence(check)
    elif kind in ("tolerance", "bound"):
        lines = _values_evidence(check)
    elif kind == "sanity":
        lines = _details(details) or ["no numbers recorded: the rule is checked directly"]
        details = {}
    else:
        raise ValueError(f"claim '{check.get('statement')}': unknown kind {kind!r}")
    cell = _items(lines)
    if details:
        cell += f"<details><summary>details</summary>{_items(_details(details))}</details>"
    return cell


def _claim_row(number: int, check: Mapping[str, Any]) -> str:
    sanity = check["kind"] == "sanity"
    verdict = "holds" if check["holds"] else "fails"
    shown = verdict
    if check.get("fragile"):
        pinned = "holds" if check["holds_pinned"] else "fails"
        shown = f"fragile ({pinned} at the pinned kernel level, not counted)"
    kind = "sanity (not counted)" if sanity else check["kind"]
    metric = f"<br><span class='muted'>{_e(check['metric'])}</span>" if check["metric"] else ""
    cells = [
        f"<td class='num'>{number}</td>",
        f"<td class='claim'>{_e(check['statement'])}{metric}</td>",
        f"<td>{_e(kind)}</td>",
        f"<td class='rule'>{_e(check['rule']['text'])}</td>",
        f"<td>{evidence(check)}</td>",
        f"<td class='{verdict}'>{_e(shown)}</td>",
    ]
    row_class = " class='sanity'" if sanity else ""
    return f"<tr{row_class}>{''.join(cells)}</tr>"


def claims_table(checks: Sequence[Mapping[str, Any]]) -> str:
    """The claim checks of a study: claim, kind, rule, evidence, verdict."""
    head = "".join(
        f"<th>{name}</th>" for name in ("#", "claim", "kind", "rule", "evidence", "verdict")
    )
    rows = "\n".join(_claim_row(number, check) for number, check in enumerate(checks, start=1))
    return (
        f"<div class='scroll'><table class='claims'><thead><tr>{head}</tr></thead>"
        f"<tbody>{rows}</tbody></table></div>"
    )


def data_table(path: str | Path) -> str:
    """A study's table.csv, its cells as written (the first column names the method)."""
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    if not rows:
        raise ValueError(f"{path}: empty table")
    head = "".join(f"<th>{_e(cell)}</th>" for cell in rows[0])
    body = "\n".join(
        "<tr>"
        + "".join(
            f"<th>{_e(cell)}</th>" if column == 0 else f"<td class='num'>{_e(cell)}</td>"
            for column, cell in enumerate(row)
        )
        + "</tr>"
        for row in rows[1:]
    )
    return (
        f"<div class='scroll'><table class='data'><thead><tr>{head}</tr></thead>"
        f"<tbody>{body}</tbody></table></div>"
    )


def is_built(study: str) -> bool:
    """Whether every contract file of `study` exists under results/<id>."""
    return all((results_dir(study) / name).is_file() for name in CONTRACT_FILES)


def read_claims(study: str) -> dict[str, Any]:
    """results/<id>/claims.json, checked against the claims schema."""
    path = results_dir(study) / "claims.json"
    document = read_json(path)
    validate_claims(document, str(path))
    if document["study"] != study:
        raise ValueError(f"{path}: names study {document['study']!r}, expected {study!r}")
    return document


def _sanity(checks: Sequence[Mapping[str, Any]]) -> tuple[int, int]:
    """(total, failing) sanity checks."""
    sanity = [c for c in checks if c["kind"] == "sanity"]
    return len(sanity), sum(not c["holds"] for c in sanity)


def _score(claims: Mapping[str, Any]) -> str:
    """'k of n', and the sanity checks beside it ('+2 sanity', '+2 sanity, 1 fails')."""
    score = f"{claims['claims_holding']} of {claims['claims_counted']}"
    total, failing = _sanity(claims["claims"])
    if total:
        fails = f", <span class='fails'>{failing} fails</span>" if failing else ""
        score += f" <span class='muted'>+{total} sanity{fails}</span>"
    fragility = claims["fragility"]
    if fragility["status"] == "checked" and fragility["fragile"]:
        score += f" <span class='fails'>{fragility['fragile']} fragile</span>"
    elif fragility["status"] != "checked":
        score += f" <span class='muted'>(fragility {_e(fragility['status'])})</span>"
    return score


def _links(study: str, provenance: bool = False) -> str:
    files = [("report", "report.html"), ("table", "table.csv"), ("claims", "claims.json")]
    if provenance:
        files.append(("provenance", "provenance.json"))
    return " · ".join(f"<a href='{_e(study)}/{name}'>{label}</a>" for label, name in files)


def _minutes(paper: Paper) -> str:
    return _DASH if paper.smoke_minutes is None else f"{paper.smoke_minutes:g}"


def scoreboard(papers: Papers, claims: Mapping[str, Mapping[str, Any]]) -> str:
    """The table of every paper: number, paper, status, claims holding, smoke run, files."""
    head = "".join(
        f"<th>{name}</th>"
        for name in ("#", "paper", "status", "claims holding", "smoke run (min)¹", "files")
    )
    rows = []
    for paper in papers.papers:
        doc = claims.get(paper.id)
        name = f"<code>{_e(paper.id)}</code>"
        if doc is not None:
            name = f"<a href='#{_e(paper.id)}'>{name}</a>"
        cells = [
            f"<td class='num'>{paper.number}</td>",
            f"<td>{name} {_e(paper.title)}</td>",
            "<td class='built'>built</td>" if doc is not None else "<td>not yet</td>",
            f"<td>{_score(doc)}</td>" if doc is not None else f"<td>{_DASH}</td>",
            f"<td class='num'>{_minutes(paper)}</td>",
            f"<td>{_links(paper.id)}</td>" if doc is not None else f"<td>{_DASH}</td>",
        ]
        row_class = "" if doc is not None else " class='notyet'"
        rows.append(f"<tr{row_class}>{''.join(cells)}</tr>")
    body = "\n".join(rows)
    ids = set(papers.ids())
    shared = ", ".join(
        f"{_e(stage)} {minutes:g}"
        for stage, minutes in sorted(papers.smoke_minutes.items())
        if stage not in ids
    )
    note = (
        "<p class='muted'>¹ Smoke run: wall time of <code>dvc repro -s &lt;stage&gt;</code> at "
        "smoke scale, measured on 2 cores at the last refresh of dvc.lock, upstream stages "
        "excluded; a figure to plan by, not a result."
        + (f" Shared stages (minutes): {shared}." if shared else "")
        + " Claims holding: the counted claim checks that hold; sanity checks are true by "
        "construction and shown apart; a fragile check (its outcome flips in another run: a "
        "second CPU kernel level, or the other processor vendor) never counts as holding.</p>"
    )
    return (
        "<div class='scroll'><table class='scoreboard'>"
        f"<thead><tr>{head}</tr></thead><tbody>\n{body}\n</tbody></table></div>" + note
    )


def study_section(paper: Paper, claims: Mapping[str, Any], scale: str) -> str:
    """One built study: heading, score and links, its table, its claim checks."""
    study = paper.id
    total, failing = _sanity(claims["claims"])
    sanity = ""
    if total:
        state = f"{failing} of them fail" if failing else "all hold"
        sanity = f"; {total} sanity check{'s' if total != 1 else ''}, not counted: {state}"
    return (
        f"<section id='{_e(study)}'><h2>{paper.number} · <code>{_e(study)}</code>: "
        f"{_e(paper.title)}</h2>"
        f"<p><b>{claims['claims_holding']} of {claims['claims_counted']}</b> counted claim checks "
        f"hold at {_e(scale)} scale{sanity}. Fragility: {_e(claims['fragility']['text'])}. "
        f"Files: {_links(study, provenance=True)}.</p>"
        f"<h3>Table</h3>{data_table(results_dir(study) / 'table.csv')}"
        f"<h3>Claim checks</h3><p class='muted'>{_e(claims['notes'])}</p>"
        f"{claims_table(claims['claims'])}</section>"
    )


def write_index(
    studies: Sequence[str],
    scale: str,
    out: str | Path,
    papers: str | Path | None = None,
) -> None:
    """Write the index page: the scoreboard of every paper in `papers` (papers.yaml, the
    package's copy by default), then a section per built study of `studies` (paper order)."""
    catalogue = load_papers(papers)
    unknown = sorted(set(studies) - set(catalogue.ids()))
    if unknown:
        raise ValueError(f"studies {unknown} are not papers of papers.yaml")
    claims = {s: read_claims(s) for s in catalogue.ids() if s in studies and is_built(s)}
    built = [paper for paper in catalogue.papers if paper.id in claims]
    holding = sum(doc["claims_holding"] for doc in claims.values())
    counted = sum(doc["claims_counted"] for doc in claims.values())
    sections = "".join(f"\n{study_section(paper, claims[paper.id], scale)}" for paper in built)
    page = (
        "<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'>"
        "<meta name='viewport' content='width=device-width, initial-scale=1'>"
        f"<title>reprolab results ({_e(scale)})</title><style>{_STYLE}</style></head><body>"
        "<h1>reprolab results</h1>"
        f"<p>Scale: <b>{_e(scale)}</b>. {len(built)} of {len(catalogue.papers)} papers built; "
        f"{holding} of {counted} counted claim checks hold. Each claim check applies a rule "
        "fixed before the run; paired checks are Holm-corrected within their study.</p>"
        f"<h2 id='scoreboard'>Scoreboard</h2>{scoreboard(catalogue, claims)}{sections}"
        "</body></html>\n"
    )
    write_text(out, page)
