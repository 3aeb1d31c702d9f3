"""Compare two results trees in substance: table cells, claim outcomes and metrics.json numbers.

Results are byte-identical only where the CPU kernels match; elsewhere the question is whether a
reproduction agrees with the reference. `compare_trees(a, b, tolerance)` reads each study's
`table.csv`, `claims.json` and `metrics.json` from two results trees and lists every difference.
A tree is a folder holding `<id>/` study folders, or `git:REV`: the files committed at REV under
`results/` of the repository of the current working directory. B is the reference.

Tolerance rule: a table cell agrees when its means satisfy |A - B| <= atol + rtol * |B| or
|A - B| <= max(std A, std B), the larger of the two seed stds. metrics.json numbers use the first
part only (metrics.json has no std beside a leaf); a claim's `mean_difference` (its effect) uses
the larger of the two `std_difference` (or `std`) values as its std. NaN (null in the JSON files)
agrees only with NaN, an infinity only with the same infinity.

What decides: every table cell agrees and every claim's `holds` is equal, with no study, table,
claims file, row, column or claim missing on either side. Metrics numbers and claim effects are
reported but do not decide (they carry per-seed values that move with the kernels). `curves.csv`
is not compared: it holds seed means without stds, and its end points are table cells.
"""

from __future__ import annotations

import contextlib
import math
import subprocess
import tempfile
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, NamedTuple

import pandas as pd

from reprolab.core.io import read_json
from reprolab.core.tables import NOT_APPLICABLE

TABLE, CLAIMS, METRICS = "table.csv", "claims.json", "metrics.json"
STUDY_FILES = (TABLE, CLAIMS, METRICS)
GIT_PREFIX = "git:"
CELL_SEPARATOR = " ± "
"""What core.tables.format_cell puts between a cell's mean and std."""
EFFECT_KEYS = ("mean_difference", "statistic", "p_value")
"""The numbers of a claim check that show its effect, printed beside a differing claim."""

Cell = tuple[float, float] | None
"""(mean, std) of a table cell; None where the metric does not apply to the row (a dash)."""
Table = dict[str, dict[str, Cell]]


class CompareError(ValueError):
    """Bad input: a missing folder or revision, or a file not in the format the writers produce."""


@dataclass(frozen=True)
class Tolerance:
    """How far a number may move and still agree with the reference (see the module docstring)."""

    rtol: float = 0.05
    atol: float = 1e-6

    def __post_init__(self) -> None:
        if self.rtol < 0 or self.atol < 0:
            raise CompareError(f"tolerances must be >= 0 (rtol={self.rtol}, atol={self.atol})")

    def bound(self, reference: float) -> float:
        """atol + rtol * |reference|: the largest gap the relative/absolute part accepts."""
        return self.atol + self.rtol * abs(reference)

    def agrees(self, a: float | None, b: float | None, spread: float = 0.0) -> bool:
        """Whether `a` agrees with the reference `b`: within `bound(b)` or within `spread`.

        None is NaN (core.io writes NaN as null); NaN and infinities agree only when equal.
        """
        x, y = _as_float(a), _as_float(b)
        if not (math.isfinite(x) and math.isfinite(y)):
            return x == y or (math.isnan(x) and math.isnan(y))
        gap = abs(x - y)
        return gap <= self.bound(y) or gap <= spread

    def describe(self) -> str:
        """The rule in words, for the report's header."""
        return (
            f"a table cell agrees when |A-B| <= atol + rtol*|B| (atol={self.atol:g}, "
            f"rtol={self.rtol:g}) or |A-B| <= max(std A, std B); metrics.json numbers use the "
            "first part only, a claim's mean_difference uses its std_difference as std; "
            "B is the reference"
        )


def _as_float(value: float | None) -> float:
    """A number as float, None (null in the JSON files) as NaN."""
    return math.nan if value is None else float(value)


def _spread(*stds: float | None) -> float:
    """The larger of the stds that are numbers (0 when none is): the seed spread a gap may fill."""
    return max((s for s in map(_as_float, stds) if not math.isnan(s)), default=0.0)


# ---- Reading the trees ------------------------------------------------------------------------


@dataclass(frozen=True)
class Tree:
    """A results tree on disk, `root/<id>/<file>`, and the name it has in messages."""

    root: Path
    label: str
    studies: frozenset[str]

    def where(self, study: str, name: str) -> str:
        """How messages name a file of the tree (for git:REV the `git show` argument)."""
        return f"{self.label}/{study}/{name}"


def open_tree(spec: str | Path, scratch: Path) -> Tree:
    """The tree named by `spec`: a folder, or `git:REV` copied out of git into `scratch`.

    A tree without any study folder is bad input: it usually means a study folder (or the
    wrong revision) was given where a results tree was expected.
    """
    text = str(spec)
    if text.startswith(GIT_PREFIX):
        tree = _git_tree(text.removeprefix(GIT_PREFIX), scratch)
    else:
        folder = Path(spec)
        if not folder.is_dir():
            raise CompareError(
                f"{folder}: no such folder (expected a results tree holding <id>/{TABLE}, "
                f"<id>/{CLAIMS}, <id>/{METRICS}, or git:REV)"
            )
        tree = Tree(folder, str(folder), _studies_in(folder))
    if not tree.studies:
        raise CompareError(
            f"{tree.label}: no study folders (expected <id>/{TABLE}, <id>/{CLAIMS} or "
            f"<id>/{METRICS} under it)"
        )
    return tree


def _studies_in(folder: Path) -> frozenset[str]:
    """Sub-folders holding at least one of the compared files (other folders are not studies)."""
    return frozenset(
        d.name
        for d in folder.iterdir()
        if d.is_dir() and any((d / name).is_file() for name in STUDY_FILES)
    )


def _git_tree(rev: str, scratch: Path) -> Tree:
    """Copy results/<id>/{table.csv,claims.json,metrics.json} at `rev` into `scratch`.

    Copying them out lets both kinds of tree be read by the same readers.
    """
    listing = _git(rev, "ls-tree", "-rz", "--full-tree", "--name-only", rev, "--", "results/")
    studies = set()
    for line in filter(None, listing.decode().split("\0")):
        parts = PurePosixPath(line).parts
        if len(parts) == 3 and parts[2] in STUDY_FILES:
            target = scratch / parts[1] / parts[2]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(_git(rev, "show", f"{rev}:{line}"))
            studies.add(parts[1])
    return Tree(scratch, f"{GIT_PREFIX}{rev}:results", frozenset(studies))


def _git(rev: str, *args: str) -> bytes:
    """Run git in the current working directory; its stdout, or CompareError naming `rev`."""
    try:
        result = subprocess.run(["git", *args], capture_output=True, check=False)
    except OSError as exc:
        raise CompareError(f"{GIT_PREFIX}{rev}: cannot run git ({exc})") from exc
    if result.returncode != 0:
        raise CompareError(
            f"{GIT_PREFIX}{rev}: expected a revision of the git repository at {Path.cwd()} "
            f"(git {args[0]}: {result.stderr.decode(errors='replace').strip()})"
        )
    return result.stdout


def read_table(path: Path, where: str) -> Table:
    """table.csv as {method: {column: (mean, std)}}, from the 'mean ± std' cells it holds.

    core.tables.write_table writes a `method` column and one 'mean ± std' string per metric, or
    its dash where the metric does not apply to the row; anything else is bad input.
    """
    try:
        frame = pd.read_csv(path, dtype=str, keep_default_na=False)
    except (OSError, ValueError) as exc:
        raise CompareError(f"{where}: expected a CSV table ({exc})") from exc
    if frame.columns[0] != "method" or frame["method"].duplicated().any():
        raise CompareError(
            f"{where}: expected a first column 'method' with one row per method "
            "(core.tables.write_table)"
        )
    columns = list(frame.columns[1:])
    return {
        row["method"]: {
            c: parse_cell(row[c], f"{where}: row '{row['method']}', column '{c}'") for c in columns
        }
        for row in frame.to_dict("records")
    }


def parse_cell(text: str, where: str) -> Cell:
    """(mean, std) of a 'mean ± std' cell (the inverse of core.tables.format_cell); None: a dash."""
    if text == NOT_APPLICABLE:
        return None
    mean, separator, std = text.partition(CELL_SEPARATOR)
    if separator:
        with contextlib.suppress(ValueError):
            return float(mean), float(std)
    raise CompareError(f"{where}: expected 'mean ± std', found {text!r}")


def read_claims(path: Path, where: str) -> dict[str, dict[str, Any]]:
    """claims.json's checks keyed by statement; a repeated statement gets ' (#2)', ' (#3)', ..."""
    document = _read_json(path, where)
    checks = document.get("claims") if isinstance(document, dict) else None
    if not isinstance(checks, list) or not all(
        isinstance(c, dict) and "statement" in c and "holds" in c for c in checks
    ):
        raise CompareError(
            f"{where}: expected {{'claims': [{{'statement': ..., 'holds': ...}}, ...]}} "
            "(core.claims.claims_document)"
        )
    seen: Counter[str] = Counter()
    keyed = {}
    for check in checks:
        statement = check["statement"]
        seen[statement] += 1
        keyed[statement if seen[statement] == 1 else f"{statement} (#{seen[statement]})"] = check
    return keyed


def _read_json(path: Path, where: str) -> Any:
    """core.io.read_json, with the error naming the file as the user gave it."""
    try:
        return read_json(path)
    except (OSError, ValueError) as exc:
        raise CompareError(f"{where}: expected JSON ({exc.__cause__ or exc})") from exc


# ---- The report -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Difference:
    """One thing that differs: `kind` (study, file, row, column, cell, claim, claim effect,
    metric), where in the study, and the numbers."""

    kind: str
    where: str
    detail: str

    def line(self, study: str) -> str:
        """The report line: 'study: kind where: detail', or 'study: kind detail' without where."""
        where = f" {self.where}:" if self.where else ""
        return f"{study}: {self.kind}{where} {self.detail}"


@dataclass
class Tally:
    """How many items were compared and how many of them agree."""

    agree: int = 0
    total: int = 0

    @property
    def full(self) -> bool:
        """Every item agrees."""
        return self.agree == self.total


@dataclass
class StudyReport:
    """The comparison of one study: tallies, the files missing on a side, the differences."""

    study: str
    cells: Tally = field(default_factory=Tally)
    claims: Tally = field(default_factory=Tally)
    metrics: Tally = field(default_factory=Tally)
    missing_files: list[str] = field(default_factory=list)
    differences: list[Difference] = field(default_factory=list)

    def add(self, kind: str, where: str, detail: str) -> None:
        """Record a difference."""
        self.differences.append(Difference(kind, where, detail))

    @property
    def cells_agree(self) -> bool:
        """Both sides have the table and every cell agrees."""
        return self.cells.full and TABLE not in self.missing_files

    @property
    def claims_equal(self) -> bool:
        """Both sides have the claims and every claim's outcome is equal."""
        return self.claims.full and CLAIMS not in self.missing_files

    def summary(self) -> str:
        """The one-line summary printed after the study's differences."""
        line = (
            f"{self.study}: {self.cells.agree}/{self.cells.total} cells agree, "
            f"{self.claims.agree}/{self.claims.total} claim outcomes equal, "
            f"{self.metrics.agree}/{self.metrics.total} metrics numbers agree"
        )
        return line + (f"; missing: {', '.join(self.missing_files)}" if self.missing_files else "")


@dataclass
class Report:
    """The comparison of two trees, as text (`to_text`) or JSON-ready data (`to_dict`)."""

    a: str
    b: str
    tolerance: Tolerance
    studies: list[StudyReport]

    @property
    def all_cells_agree(self) -> bool:
        """Every study has both tables and all their cells agree."""
        return all(s.cells_agree for s in self.studies)

    @property
    def all_claims_equal(self) -> bool:
        """Every study has both claims files and all claim outcomes are equal."""
        return all(s.claims_equal for s in self.studies)

    @property
    def ok(self) -> bool:
        """The reproduction agrees in substance: what decides the exit code."""
        return self.all_cells_agree and self.all_claims_equal

    def to_text(self) -> str:
        """Header and rule, per study its differences then its summary, and the verdicts."""
        lines = [f"comparing A = {self.a} with B = {self.b}", f"rule: {self.tolerance.describe()}"]
        for study in self.studies:
            lines += [d.line(study.study) for d in study.differences]
            lines.append(study.summary())
        lines.append(f"all table cells agree: {_yes(self.all_cells_agree)}")
        lines.append(f"all claim outcomes equal: {_yes(self.all_claims_equal)}")
        return "\n".join(lines) + "\n"

    def to_dict(self) -> dict[str, Any]:
        """The same content as `to_text`, as data."""
        return {
            "a": self.a,
            "b": self.b,
            "rtol": self.tolerance.rtol,
            "atol": self.tolerance.atol,
            "rule": self.tolerance.describe(),
            "studies": [
                {**asdict(s), "cells_agree": s.cells_agree, "claims_equal": s.claims_equal}
                for s in self.studies
            ],
            "all_cells_agree": self.all_cells_agree,
            "all_claim_outcomes_equal": self.all_claims_equal,
        }


def _yes(flag: bool) -> str:
    return "yes" if flag else "no"


def _number(value: Any) -> str:
    """A number for the report: 4 significant digits, null as NaN."""
    return "nan" if value is None else f"{value:.4g}"


def _cell_text(cell: Cell) -> str:
    """A table cell for the report: 'mean ± std' in `_number`'s digits, or the dash."""
    return NOT_APPLICABLE if cell is None else CELL_SEPARATOR.join(map(_number, cell))


# ---- Comparing --------------------------------------------------------------------------------


def compare_trees(
    a: str | Path,
    b: str | Path,
    tolerance: Tolerance | None = None,
    studies: Sequence[str] | None = None,
) -> Report:
    """Compare tree `a` with the reference tree `b` (each a folder or 'git:REV').

    `studies` limits the comparison to those ids (each reported missing where it is absent);
    by default every study of either tree is compared, so one present on a side only shows up.
    """
    tolerance = tolerance or Tolerance()
    with tempfile.TemporaryDirectory(prefix="reprolab-compare-") as scratch:
        tree_a = open_tree(a, Path(scratch) / "a")
        tree_b = open_tree(b, Path(scratch) / "b")
        ids = list(studies) if studies else sorted(tree_a.studies | tree_b.studies)
        reports = [compare_study(study, tree_a, tree_b, tolerance) for study in ids]
    return Report(str(a), str(b), tolerance, reports)


class _Part(NamedTuple):
    """One compared file: how to read it, count its items, compare two of it, where it tallies."""

    name: str
    read: Callable[[Path, str], Any]
    size: Callable[[Any], int]
    compare: Callable[[Any, Any, Tolerance, StudyReport], None]
    tally: str


def compare_study(study: str, a: Tree, b: Tree, tolerance: Tolerance) -> StudyReport:
    """Compare one study's table, claims and metrics between the trees.

    A file missing on one side is one difference and all the other side's items count as not
    agreeing; a study missing on a side is reported once instead of once per file.
    """
    report = StudyReport(study)
    absent = [side for side, tree in (("A", a), ("B", b)) if study not in tree.studies]
    if absent:
        report.add("study", "", f"missing in {' and '.join(absent)}")
    for part in _PARTS:
        docs = [_load(tree, study, part) for tree in (a, b)]
        missing = [side for side, doc in zip("AB", docs, strict=True) if doc is None]
        if not missing:
            part.compare(docs[0], docs[1], tolerance, report)
            continue
        report.missing_files.append(part.name)
        if not absent:
            report.add("file", part.name, f"missing in {' and '.join(missing)}")
        getattr(report, part.tally).total += sum(part.size(d) for d in docs if d is not None)
    return report


def _load(tree: Tree, study: str, part: _Part) -> Any | None:
    """The parsed file, or None when the tree does not have it."""
    path = tree.root / study / part.name
    return part.read(path, tree.where(study, part.name)) if path.is_file() else None


def _align(a: Iterable[str], b: Iterable[str]) -> tuple[list[str], list[str], list[str]]:
    """Keys on both sides (in B's order), keys only in A, keys only in B."""
    a, b = list(a), list(b)
    in_a, in_b = set(a), set(b)
    return (
        [k for k in b if k in in_a],
        [k for k in a if k not in in_b],
        [k for k in b if k not in in_a],
    )


def _cell_keys(table: Table) -> set[tuple[str, str]]:
    """The (row, column) pairs a table has a cell for."""
    return {(row, column) for row, cells in table.items() for column in cells}


def _columns(table: Table) -> list[str]:
    """A table's columns in order."""
    return list(dict.fromkeys(c for cells in table.values() for c in cells))


def compare_tables(a: Table, b: Table, tolerance: Tolerance, report: StudyReport) -> None:
    """Compare the means cell by cell; a missing row or column is one difference for its cells."""
    rows, rows_a, rows_b = _align(a, b)
    columns, columns_a, columns_b = _align(_columns(a), _columns(b))
    for kind, only_a, only_b in (("row", rows_a, rows_b), ("column", columns_a, columns_b)):
        for key in only_a:
            report.add(kind, f"'{key}'", "missing in B")
        for key in only_b:
            report.add(kind, f"'{key}'", "missing in A")
    report.cells.total += len(_cell_keys(a) | _cell_keys(b))
    for row in rows:
        for column in columns:
            _compare_cell(a[row][column], b[row][column], tolerance, report, row, column)


def _compare_cell(
    a: Cell, b: Cell, tolerance: Tolerance, report: StudyReport, row: str, column: str
) -> None:
    """Count one cell; if its means disagree, record the gap against both parts of the rule.

    Two dashes agree; a dash against a number is a difference (the metric applies in one tree
    only)."""
    if a is None or b is None:
        if a is None and b is None:
            report.cells.agree += 1
        else:
            shown = f"A {_cell_text(a)}, B {_cell_text(b)}"
            report.add("cell", f"row '{row}', column '{column}'", shown)
        return
    spread = _spread(a[1], b[1])
    if tolerance.agrees(a[0], b[0], spread):
        report.cells.agree += 1
        return
    report.add(
        "cell",
        f"row '{row}', column '{column}'",
        f"A {_cell_text(a)}, B {_cell_text(b)}: "
        f"|A-B| = {_number(abs(a[0] - b[0]))} > atol + rtol*|B| = {_number(tolerance.bound(b[0]))} "
        f"and > max std = {_number(spread)}",
    )


def compare_claims(
    a: dict[str, dict[str, Any]],
    b: dict[str, dict[str, Any]],
    tolerance: Tolerance,
    report: StudyReport,
) -> None:
    """Compare each claim's `holds`; where it is equal, also whether the effect agrees."""
    common, only_a, only_b = _align(a, b)
    report.claims.total += len(common) + len(only_a) + len(only_b)
    for key in only_a:
        report.add("claim", f"'{key}'", "missing in B")
    for key in only_b:
        report.add("claim", f"'{key}'", "missing in A")
    for key in common:
        ca, cb = a[key], b[key]
        if bool(ca["holds"]) != bool(cb["holds"]):
            detail = f"holds A {_yes(ca['holds'])}, B {_yes(cb['holds'])}; {_effects(ca, cb)}"
            report.add("claim", f"'{key}'", detail)
            continue
        report.claims.agree += 1
        spread = _spread(*(c.get("std_difference", c.get("std")) for c in (ca, cb)))
        if not tolerance.agrees(ca.get("mean_difference"), cb.get("mean_difference"), spread):
            detail = f"outcome equal (holds {_yes(cb['holds'])}); {_effects(ca, cb)}"
            report.add("claim effect", f"'{key}'", detail)


def _effects(a: dict[str, Any], b: dict[str, Any]) -> str:
    """The effect numbers either check has, A against B."""
    keys = [k for k in EFFECT_KEYS if k in a or k in b]
    if not keys:
        return "no effect numbers (a check without a test)"
    return ", ".join(f"{k} A {_number(a.get(k))} vs B {_number(b.get(k))}" for k in keys)


def compare_metrics(
    a: Any, b: Any, tolerance: Tolerance, report: StudyReport, path: str = ""
) -> None:
    """Walk both JSON documents together and compare every leaf.

    Numbers use the tolerance (no std), other leaves must be equal. A key, list tail or subtree
    present on one side only is one difference, counting all the numbers under it.
    """
    if isinstance(a, dict) and isinstance(b, dict):
        common, only_a, only_b = _align(a, b)
        for key in only_a:
            _missing(a[key], _join(path, key), "B", report)
        for key in only_b:
            _missing(b[key], _join(path, key), "A", report)
        for key in common:
            compare_metrics(a[key], b[key], tolerance, report, _join(path, key))
    elif isinstance(a, list) and isinstance(b, list):
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            compare_metrics(x, y, tolerance, report, f"{path}[{i}]")
        for i in range(len(b), len(a)):
            _missing(a[i], f"{path}[{i}]", "B", report)
        for i in range(len(a), len(b)):
            _missing(b[i], f"{path}[{i}]", "A", report)
    elif isinstance(a, dict | list) or isinstance(b, dict | list):
        report.metrics.total += max(_leaves(a), _leaves(b))
        report.add("metric", path, f"A is {type(a).__name__}, B is {type(b).__name__}")
    else:
        report.metrics.total += 1
        if _leaf_agrees(a, b, tolerance):
            report.metrics.agree += 1
        else:
            report.add("metric", path, f"A {a} vs B {b}")


def _leaf_agrees(a: Any, b: Any, tolerance: Tolerance) -> bool:
    """Numbers (not booleans) by the tolerance; strings, booleans and nulls by equality."""
    if _is_number(a) and _is_number(b):
        return tolerance.agrees(a, b)
    return a == b


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _missing(value: Any, path: str, side: str, report: StudyReport) -> None:
    """Record a subtree present on one side only; its leaves count as not agreeing."""
    count = _leaves(value)
    report.metrics.total += count
    report.add("metric", path, f"missing in {side} ({count} values)")


def _leaves(value: Any) -> int:
    """How many leaves a JSON value holds (a leaf counts 1)."""
    if isinstance(value, dict):
        return sum(map(_leaves, value.values()))
    if isinstance(value, list):
        return sum(map(_leaves, value))
    return 1


def _join(path: str, key: str) -> str:
    return f"{path}/{key}" if path else key


_PARTS = (
    _Part(TABLE, read_table, lambda t: sum(map(len, t.values())), compare_tables, "cells"),
    _Part(CLAIMS, read_claims, len, compare_claims, "claims"),
    _Part(METRICS, _read_json, _leaves, compare_metrics, "metrics"),
)
