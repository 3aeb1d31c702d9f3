"""Check and load a file of instruction records, reporting every defect with its line.

A record file is either JSONL (one record per line, blank lines allowed), as our generator
writes it, or one JSON array of records, as CoIN ships its files; the first non-blank character
(`{` or `[`) tells which. An array is read element by element with `JSONDecoder.raw_decode`, so
each defect names the line on which its element starts; a syntax error inside an array ends the
scan there (the decoder cannot find the next element), whereas a JSONL file goes on past a bad
line. Every record is checked (`records.record_problems`, image references through
`images.ImageLoader`) and ids must be unique within the file.

`check_file` returns the defects; `load_records` returns the records, or raises
`StreamFormatError` whose message is the whole report, so a bad file is refused with all that
is wrong in it. Loaded records hold absolute image references (see `images.ImageRef`), so one
loader reads them from anywhere.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reprolab.preprocess.instr.images import ImageLoader, confined, parse_ref
from reprolab.preprocess.instr.records import Record, image_texts, record_problems

JSON_WHITESPACE = " \t\n\r"
TOO_DEEP = "bad JSON: nested deeper than the JSON reader allows"


class StreamFormatError(ValueError):
    """A record file or stream manifest is malformed; the message says where and how."""


@dataclass(frozen=True)
class Defect:
    """One problem of a record file: 1-based line, the record's id when known, the message."""

    line: int
    record_id: str | None
    message: str

    def describe(self) -> str:
        """`line N (id X): message`, as in a load report."""
        where = f"line {self.line}" + (f" (id {self.record_id})" if self.record_id else "")
        return f"{where}: {self.message}"

    def format(self, path: str | Path) -> str:
        """`FILE:LINE: (id X) message`, as compilers print it (editors jump to the line)."""
        record = f"(id {self.record_id}) " if self.record_id else ""
        return f"{path}:{self.line}: {record}{self.message}"


@dataclass(frozen=True)
class FileCheck:
    """What checking a file found: how many records are good, and every defect."""

    path: Path
    ok: int
    defects: tuple[Defect, ...]

    @property
    def bad(self) -> int:
        """How many records (or unparsable lines) have a defect."""
        return len({defect.line for defect in self.defects})


Entry = tuple[int, Any]  # (line, decoded value)


def _bad_json(exc: json.JSONDecodeError) -> str:
    return f"bad JSON: {exc.msg} at column {exc.colno}"


def _jsonl_entries(text: str) -> tuple[list[Entry], list[Defect]]:
    entries, defects = [], []
    for number, line in enumerate(text.split("\n"), start=1):
        if not line.strip(JSON_WHITESPACE):
            continue
        try:
            entries.append((number, json.loads(line)))
        except json.JSONDecodeError as exc:
            defects.append(Defect(number, None, _bad_json(exc)))
        except RecursionError:
            defects.append(Defect(number, None, TOO_DEEP))
    return entries, defects


def _skip(text: str, pos: int) -> int:
    while pos < len(text) and text[pos] in JSON_WHITESPACE:
        pos += 1
    return pos


def _array_entries(text: str, start: int) -> tuple[list[Entry], list[Defect]]:
    decoder = json.JSONDecoder()
    entries: list[Entry] = []
    pos, line, counted = _skip(text, start + 1), 1, 0

    def line_at(at: int) -> int:
        nonlocal line, counted
        line += text.count("\n", counted, at)
        counted = at
        return line

    if pos < len(text) and text[pos] == "]":
        pos = _skip(text, pos + 1)
    else:
        while True:
            try:
                value, end = decoder.raw_decode(text, pos)
            except json.JSONDecodeError as exc:
                message = f"{_bad_json(exc)}; the rest of the array is not checked"
                return entries, [Defect(exc.lineno, None, message)]
            except RecursionError:
                message = f"{TOO_DEEP}; the rest of the array is not checked"
                return entries, [Defect(line_at(pos), None, message)]
            entries.append((line_at(pos), value))
            pos = _skip(text, end)
            if pos < len(text) and text[pos] == ",":
                pos = _skip(text, pos + 1)
                continue
            if pos < len(text) and text[pos] == "]":
                pos = _skip(text, pos + 1)
                break
            message = "bad JSON: expected ',' or ']' after the record"
            return entries, [Defect(line_at(min(pos, len(text))), None, message)]
    if pos < len(text):
        return entries, [Defect(line_at(pos), None, "text after the closing ']' of the array")]
    return entries, []


def _entries(path: Path) -> tuple[list[Entry], list[Defect]]:
    """The decoded values of a file with their lines, and the defects of parsing it."""
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as exc:
        return [], [Defect(1, None, f"{path} is not UTF-8 text ({exc.reason})")]
    start = _skip(text, 0)
    if start == len(text):
        return [], [Defect(1, None, f"{path} holds no records")]
    line = text.count("\n", 0, start) + 1
    if text[start] == "{":
        entries, defects = _jsonl_entries(text)
    elif text[start] == "[":
        entries, defects = _array_entries(text, start)
    else:
        message = (
            f"{path} is neither JSONL nor a JSON array of records: "
            "its first character is not '{' or '['"
        )
        return [], [Defect(line, None, message)]
    if not entries and not defects:
        defects = [Defect(line, None, f"{path} holds no records")]
    return entries, defects


def _record_id(value: Any) -> str | None:
    if isinstance(value, dict) and isinstance(value.get("id"), str | int):
        if not isinstance(value["id"], bool):
            return str(value["id"])
    return None


def _image_checker(
    loader: ImageLoader, base_dir: Path, image_root: Path | None, within: Sequence[Path] | None
) -> Callable[[str], str | None]:
    def problem(text: str) -> str | None:
        try:
            ref = confined(parse_ref(text, base_dir, image_root), within)
        except ValueError as exc:
            return str(exc)
        return loader.problem(ref)

    return problem


def _scan(
    path: Path, image_root: str | Path | None, loader: ImageLoader, within: Sequence[Path] | None
) -> tuple[list[Entry], list[Defect]]:
    """The file's well-formed records with their lines, and every defect, in line order."""
    if not path.is_file():
        raise FileNotFoundError(f"record file {path} does not exist")
    entries, defects = _entries(path)
    root = Path(image_root) if image_root is not None else None
    check_image = _image_checker(loader, path.parent, root, within)
    first_line: dict[str, int] = {}
    good = []
    for line, value in entries:
        record_id = _record_id(value)
        problems = record_problems(value, check_image)
        if record_id is not None and record_id in first_line:
            problems.append(f"duplicate id '{record_id}' (first on line {first_line[record_id]})")
        elif record_id is not None:
            first_line[record_id] = line
        defects += [Defect(line, record_id, message) for message in problems]
        if not problems:
            good.append((line, value))
    defects.sort(key=lambda defect: defect.line)
    return good, defects


def scan_file(
    path: str | Path,
    image_root: str | Path | None = None,
    within: Sequence[Path] | None = None,
) -> FileCheck:
    """Check every record of `path`: how many are good, and all defects. With `within`, an image
    outside those folders is a defect (a stream's records stay inside the stream)."""
    path = Path(path)
    with ImageLoader() as loader:
        good, defects = _scan(path, image_root, loader, within)
    return FileCheck(path, len(good), tuple(defects))


def check_file(path: str | Path, image_root: str | Path | None = None) -> list[Defect]:
    """Every defect of the record file `path` (empty when all its records are good).

    Image files are looked up under `image_root` (default: the file's folder), h5 files beside
    the record file. FileNotFoundError when `path` does not exist.
    """
    return list(scan_file(path, image_root).defects)


def report(path: str | Path, defects: list[Defect] | tuple[Defect, ...]) -> str:
    """The file name, then one `line N (id X): message` line per defect."""
    lines = [f"{path}: {len(defects)} defect(s)"] + [d.describe() for d in defects]
    return "\n".join(lines)


def load_records(
    path: str | Path,
    image_root: str | Path | None = None,
    task: str | None = None,
    metric: str | None = None,
    within: Sequence[Path] | None = None,
) -> list[Record]:
    """The records of `path` with absolute image references, `task`/`metric` filled where a
    record lacks them; StreamFormatError with the whole report when any record is bad (with
    `within`, also when an image lies outside those folders)."""
    path = Path(path)
    with ImageLoader() as loader:
        good, defects = _scan(path, image_root, loader, within)
    if defects:
        raise StreamFormatError(report(path, defects))
    root = image_root if image_root is not None else path.parent
    return [
        Record.from_json(
            value,
            task=task,
            metric=metric,
            images=tuple(str(parse_ref(t, path.parent, root)) for t in image_texts(value)),
        )
        for _, value in good
    ]
