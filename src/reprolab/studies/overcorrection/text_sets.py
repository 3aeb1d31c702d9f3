"""Readers of the public benchmarks the study's paper scale corrects a model's answers with, each
in the file format its authors released (nothing is downloaded here; the files are read where
params.yaml puts them).

In-context classification sets, read as a `TextSet` (labels index its `label_words`):

* SST-2 (GLUE): `train.tsv` or `dev.tsv`, a tab-separated file whose first line is the header
  `sentence<TAB>label`; each further line is a sentence and its label, 0 (negative) or 1
  (positive). There is no quoting: a line is split at its tab.
* AG News (Zhang et al.): `train.csv` or `test.csv`, comma-separated without a header, every
  field in double quotes (inner quotes doubled): class index 1–4 (world, sports, business,
  technology), title, description. Newlines inside a text appear as the two characters `\\n`
  and some HTML entities remain, a few with their `&` lost (`#39;`).
* TREC question classification: `train_5500.label` or `TREC_10.label`, latin-1, one question a
  line after its label `COARSE:fine` and a space; the six coarse classes are the labels.
* SUBJ (Pang & Lee, subjectivity dataset v1.0): a folder holding `plot.tok.gt9.5000`
  (objective sentences from plot summaries) and `quote.tok.gt9.5000` (subjective sentences from
  reviews), latin-1, one sentence a line.

Open-domain QA sets for retrieval, read as a `QASet`:

* NQ-open: JSON Lines, one object a line with `question` (a string) and `answer` (a list of
  accepted answer strings).
* PopQA: `popQA.tsv`, tab-separated with a header; the columns used are `question`,
  `possible_answers` (a JSON list of strings) and `prop` (the Wikidata relation asked about).
* TriviaQA: the released JSON file (e.g. `qa/wikipedia-dev.json`), one object whose `Data` list
  holds entries with `Question` and `Answer` = {`Value`, `Aliases`, ...}.

And DPR's Wikipedia passages `psgs_w100.tsv`: tab-separated with the header `id text title`,
texts quoted csv-style (double quotes, inner quotes doubled), read as a `PassageStore`.

Every reader keeps the file's order, strips texts of surrounding whitespace, and skips a
malformed line (wrong number of columns, a label outside the set, empty text, bad JSON, a
missing key), recording it in `skipped` as "<file name>:<line>: <what was wrong>" (TriviaQA's
entries are located by their index in `Data`, "<file name>:Data[<i>]"). A missing file raises
FileNotFoundError; a file with no valid line, or whose header is not the format's, ValueError.
`limit` stops after that many valid examples.
"""

from __future__ import annotations

import csv
import html
import json
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

T = TypeVar("T")
Row = TypeVar("Row")

SST2_WORDS = ("negative", "positive")
AGNEWS_WORDS = ("world", "sports", "business", "technology")
TREC_CLASSES = ("ABBR", "DESC", "ENTY", "HUM", "LOC", "NUM")
TREC_WORDS = ("abbreviation", "description", "entity", "human", "location", "number")
SUBJ_WORDS = ("objective", "subjective")
SUBJ_FILES = ("plot.tok.gt9.5000", "quote.tok.gt9.5000")
_LOST_AMPERSAND = re.compile(r"(?<!&)#(\d+);")


@dataclass(frozen=True)
class LabelledText:
    """A text and its class index."""

    text: str
    label: int


@dataclass(frozen=True)
class TextSet:
    """A classification set: `label_words[label]` is the answer word of class `label`."""

    name: str
    label_words: tuple[str, ...]
    examples: tuple[LabelledText, ...]
    skipped: tuple[str, ...]


@dataclass(frozen=True)
class QAExample:
    """A question, its accepted answers (first the canonical one) and, where the set has it, the
    relation it asks about."""

    question: str
    answers: tuple[str, ...]
    relation: str | None


@dataclass(frozen=True)
class QASet:
    """An open-domain QA set."""

    name: str
    examples: tuple[QAExample, ...]
    skipped: tuple[str, ...]


@dataclass(frozen=True)
class Passage:
    """A retrieval passage: its id in the store, its article's title and its text."""

    id: str
    title: str
    text: str


@dataclass(frozen=True)
class PassageStore:
    """The passages of a store in file order, and the lines skipped."""

    passages: tuple[Passage, ...]
    skipped: tuple[str, ...]


class _Malformed(ValueError):
    """A line a reader skips; the message says what was wrong with it."""


def _require(path: Path, what: str) -> Path:
    """`path` if it exists; otherwise FileNotFoundError naming it and what it should be."""
    if not path.exists():
        raise FileNotFoundError(f"{path} not found: expected {what}")
    return path


def _collect(
    source: Path,
    rows: Iterable[tuple[str, Row]],
    parse: Callable[[Row], T],
    limit: int | None,
) -> tuple[tuple[T, ...], tuple[str, ...]]:
    """Parse located rows ("<file>:<line>", row) in order into the kept items and the skip
    records, stopping after `limit` items. A row whose parse raises `_Malformed` is recorded
    and passed over; if none is kept, ValueError names `source` and the first skips."""
    if limit is not None and limit < 1:
        raise ValueError(f"limit must be a positive number of examples, not {limit}")
    kept: list[T] = []
    skipped: list[str] = []
    for where, row in rows:
        try:
            kept.append(parse(row))
        except _Malformed as error:
            skipped.append(f"{where}: {error}")
            continue
        if len(kept) == limit:
            break
    if not kept:
        reasons = "; ".join(skipped[:3]) or "the file holds no examples"
        raise ValueError(f"{source}: no valid example ({reasons})")
    return tuple(kept), tuple(skipped)


def _lines(path: Path, encoding: str = "utf-8") -> Iterator[tuple[str, str]]:
    """The lines of a text file without their line ending, located "<file name>:<line>"."""
    with path.open(encoding=encoding) as handle:
        for number, line in enumerate(handle, 1):
            yield f"{path.name}:{number}", line.rstrip("\r\n")


def _csv_rows(path: Path, delimiter: str) -> Iterator[tuple[str, list[str]]]:
    """The records of a csv-quoted file, each located at the line it starts on (a quoted field
    may span lines)."""
    with path.open(encoding="utf-8", newline="") as handle:
        reader = csv.reader(handle, delimiter=delimiter)
        start = 1
        for record in reader:
            yield f"{path.name}:{start}", record
            start = reader.line_num + 1


def _header(
    path: Path, rows: Iterator[tuple[str, list[str]]], required: tuple[str, ...]
) -> tuple[dict[str, int], int]:
    """Consume the header (the first row) of `rows`: the column of each `required` name and the
    number of columns; ValueError if it lacks one (the file is not of the expected format)."""
    _, header = next(rows, ("", []))
    columns = {name.strip(): index for index, name in enumerate(header)}
    missing = [name for name in required if name not in columns]
    if missing:
        raise ValueError(f"{path}: header {header} lacks the column(s) {', '.join(missing)}")
    return {name: columns[name] for name in required}, len(header)


def _text(value: object, what: str = "text") -> str:
    """A string field stripped; `_Malformed` if it is not a string or is empty."""
    if not isinstance(value, str):
        raise _Malformed(f"{what} is not a string")
    if not value.strip():
        raise _Malformed(f"empty {what}")
    return value.strip()


def _label(value: str, classes: tuple[str, ...]) -> int:
    """The index of `value` among `classes`; `_Malformed` if it is not one of them."""
    if value.strip() not in classes:
        raise _Malformed(f"label {value.strip()!r} not in {', '.join(classes)}")
    return classes.index(value.strip())


def _fields(row: list[str], count: int) -> list[str]:
    """The row if it has `count` fields; `_Malformed` otherwise."""
    if len(row) != count:
        raise _Malformed(f"{len(row)} columns, expected {count}")
    return row


def _answers(values: Iterable[object]) -> tuple[str, ...]:
    """Answer strings stripped, empty ones and repeats dropped, order kept; `_Malformed` if one
    is not a string or none remains."""
    kept: dict[str, None] = {}
    for value in values:
        if not isinstance(value, str):
            raise _Malformed(f"answer {value!r} is not a string")
        if value.strip():
            kept.setdefault(value.strip())
    if not kept:
        raise _Malformed("no answer")
    return tuple(kept)


def read_sst2(path: str | Path, *, limit: int | None = None) -> TextSet:
    """GLUE's SST-2 `train.tsv` or `dev.tsv` as a two-class set (negative, positive). Lines are
    split at their tab rather than parsed as csv: the sentences are unquoted and contain quote
    characters."""
    path = _require(Path(path), "GLUE SST-2 train.tsv or dev.tsv")
    lines = _lines(path)
    _, header = next(lines, ("", ""))
    if header.split("\t") != ["sentence", "label"]:
        raise ValueError(f"{path}: header {header!r} is not SST-2's 'sentence<TAB>label'")

    def parse(line: str) -> LabelledText:
        text, label = _fields(line.split("\t"), 2)
        return LabelledText(_text(text), _label(label, ("0", "1")))

    examples, skipped = _collect(path, lines, parse, limit)
    return TextSet("sst2", SST2_WORDS, examples, skipped)


def _agnews_text(title: str, description: str) -> str:
    """An AG News item's text: title, a space, description, with the escaped newlines `\\n`
    made spaces and HTML entities decoded, also those that lost their `&` (`#39;` is `'`)."""
    joined = f"{title} {description}".replace("\\n", " ")
    return html.unescape(_LOST_AMPERSAND.sub(r"&#\1;", joined)).strip()


def read_agnews(path: str | Path, *, limit: int | None = None) -> TextSet:
    """AG News `train.csv` or `test.csv` as a four-class set; label = class index − 1."""
    path = _require(Path(path), "AG News train.csv or test.csv")

    def parse(row: list[str]) -> LabelledText:
        index, title, description = _fields(row, 3)
        label = _label(index, ("1", "2", "3", "4"))
        return LabelledText(_text(_agnews_text(title, description)), label)

    examples, skipped = _collect(path, _csv_rows(path, ","), parse, limit)
    return TextSet("agnews", AGNEWS_WORDS, examples, skipped)


def read_trec(path: str | Path, *, limit: int | None = None) -> TextSet:
    """TREC's `train_5500.label` or `TREC_10.label` as a six-class set over the coarse classes
    (the fine class after the colon is dropped)."""
    path = _require(Path(path), "TREC question classification train_5500.label or TREC_10.label")

    def parse(line: str) -> LabelledText:
        tag, _, question = line.partition(" ")
        coarse, colon, fine = tag.partition(":")
        if not colon or not fine:
            raise _Malformed(f"label {tag!r} is not COARSE:fine")
        return LabelledText(_text(question), _label(coarse, TREC_CLASSES))

    examples, skipped = _collect(path, _lines(path, "latin-1"), parse, limit)
    return TextSet("trec", TREC_WORDS, examples, skipped)


def read_subj(folder: str | Path, *, limit: int | None = None) -> TextSet:
    """The subjectivity v1.0 folder as a two-class set: the objective file's sentences (label 0),
    then the subjective file's (label 1), each in file order."""
    folder = Path(folder)
    paths = [
        _require(folder / name, f"Pang & Lee subjectivity v1.0 {name} ({word} sentences)")
        for name, word in zip(SUBJ_FILES, SUBJ_WORDS, strict=True)
    ]
    rows = (
        (where, (label, line))
        for label, path in enumerate(paths)
        for where, line in _lines(path, "latin-1")
    )

    def parse(row: tuple[int, str]) -> LabelledText:
        label, line = row
        return LabelledText(_text(line), label)

    examples, skipped = _collect(folder, rows, parse, limit)
    return TextSet("subj", SUBJ_WORDS, examples, skipped)


TEXT_SETS: dict[str, Callable[..., TextSet]] = {
    "sst2": read_sst2,
    "agnews": read_agnews,
    "trec": read_trec,
    "subj": read_subj,
}


def read_text_set(name: str, path: str | Path, *, limit: int | None = None) -> TextSet:
    """The classification set `name` (a key of `TEXT_SETS`) read from `path`."""
    if name not in TEXT_SETS:
        raise ValueError(f"unknown text set {name!r}; known: {', '.join(TEXT_SETS)}")
    return TEXT_SETS[name](path, limit=limit)


def _json(text: str) -> object:
    """The JSON value `text` holds; `_Malformed` if it is not valid JSON."""
    try:
        return json.loads(text)
    except json.JSONDecodeError as error:
        raise _Malformed(f"bad JSON ({error.msg})") from None


def _json_object(line: str) -> dict[str, Any]:
    """A line's JSON object; `_Malformed` if it is not valid JSON or not an object."""
    value = _json(line)
    if not isinstance(value, dict):
        raise _Malformed("not a JSON object")
    return value


def _key(mapping: dict[str, Any], key: str) -> Any:
    """`mapping[key]`; `_Malformed` naming the key if it is missing."""
    if key not in mapping:
        raise _Malformed(f"missing key {key!r}")
    return mapping[key]


def _answer_list(value: object, what: str) -> list[object]:
    """A JSON list of answers; `_Malformed` if `value` is not a list."""
    if not isinstance(value, list):
        raise _Malformed(f"{what} is not a list")
    return value


def read_nq_open(path: str | Path, *, limit: int | None = None) -> QASet:
    """NQ-open's JSON Lines file as a QA set without relations."""
    path = _require(Path(path), "NQ-open JSON Lines (question, answer list)")

    def parse(line: str) -> QAExample:
        item = _json_object(line)
        question = _text(_key(item, "question"), "question")
        answers = _answers(_answer_list(_key(item, "answer"), "answer"))
        return QAExample(question, answers, None)

    examples, skipped = _collect(path, _lines(path), parse, limit)
    return QASet("nq_open", examples, skipped)


def read_popqa(path: str | Path, *, limit: int | None = None) -> QASet:
    """PopQA's `popQA.tsv` as a QA set whose relation is the `prop` column. The file is read as
    csv with tabs, since a writer may quote the JSON answer lists."""
    path = _require(Path(path), "PopQA popQA.tsv")
    rows = _csv_rows(path, "\t")
    columns, width = _header(path, rows, ("question", "possible_answers", "prop"))

    def parse(row: list[str]) -> QAExample:
        fields = _fields(row, width)
        answers = _answer_list(_json(fields[columns["possible_answers"]]), "possible_answers")
        relation = fields[columns["prop"]].strip() or None
        return QAExample(
            _text(fields[columns["question"]], "question"), _answers(answers), relation
        )

    examples, skipped = _collect(path, rows, parse, limit)
    return QASet("popqa", examples, skipped)


def read_triviaqa(path: str | Path, *, limit: int | None = None) -> QASet:
    """TriviaQA's released JSON as a QA set: answers are the `Value`, then its `Aliases` other
    than it, repeats dropped (an entry without `Aliases` keeps its `Value` alone). The whole file
    must be valid JSON with a `Data` list (ValueError otherwise); a bad entry is skipped and
    located by its index in `Data`."""
    path = _require(Path(path), "TriviaQA JSON (e.g. qa/wikipedia-dev.json)")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))["Data"]
    except (json.JSONDecodeError, KeyError, TypeError) as error:
        raise ValueError(f"{path}: not TriviaQA's JSON with a 'Data' list ({error})") from None
    if not isinstance(data, list):
        raise ValueError(f"{path}: 'Data' is not a list")

    def parse(entry: object) -> QAExample:
        if not isinstance(entry, dict):
            raise _Malformed("entry is not a JSON object")
        answer = _key(entry, "Answer")
        if not isinstance(answer, dict):
            raise _Malformed("Answer is not a JSON object")
        value = _text(_key(answer, "Value"), "Answer.Value")
        aliases = _answer_list(answer.get("Aliases", []), "Answer.Aliases")
        question = _text(_key(entry, "Question"), "question")
        return QAExample(question, _answers([value, *aliases]), None)

    rows = ((f"{path.name}:Data[{index}]", entry) for index, entry in enumerate(data))
    examples, skipped = _collect(path, rows, parse, limit)
    return QASet("triviaqa", examples, skipped)


QA_SETS: dict[str, Callable[..., QASet]] = {
    "nq_open": read_nq_open,
    "popqa": read_popqa,
    "triviaqa": read_triviaqa,
}


def read_qa_set(name: str, path: str | Path, *, limit: int | None = None) -> QASet:
    """The QA set `name` (a key of `QA_SETS`) read from `path`."""
    if name not in QA_SETS:
        raise ValueError(f"unknown QA set {name!r}; known: {', '.join(QA_SETS)}")
    return QA_SETS[name](path, limit=limit)


def read_passages(path: str | Path, *, limit: int | None = None) -> PassageStore:
    """DPR's `psgs_w100.tsv` as a passage store, read as csv with tabs (its texts are quoted).
    A passage needs an id and a text; its title may be empty."""
    path = _require(Path(path), "DPR Wikipedia passages psgs_w100.tsv")
    rows = _csv_rows(path, "\t")
    columns, width = _header(path, rows, ("id", "text", "title"))

    def parse(row: list[str]) -> Passage:
        fields = _fields(row, width)
        return Passage(
            _text(fields[columns["id"]], "id"),
            fields[columns["title"]].strip(),
            _text(fields[columns["text"]]),
        )

    passages, skipped = _collect(path, rows, parse, limit)
    return PassageStore(passages, skipped)
