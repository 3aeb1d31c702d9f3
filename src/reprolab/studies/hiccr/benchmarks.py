"""hiccr's paper-scale data, read from the files as released: ViRL39K and MathVista testmini.

The paper trains with RL on ViRL39K (TIGER-Lab/ViRL39K, `39Krelease.parquet` plus the images of
`images.zip`) and tests on MathVista testmini (AI4Math/MathVista, `data/testmini-*.parquet`).
Both readers give the same `BenchmarkItem`s: an id, the text the model is asked, one encoded
image, the reference answer and how to compare against it (see `answers.is_correct`).

Released formats (checked against the dataset cards and code that reads the files):
- ViRL39K: columns `qid`, `question`, `answer` (wrapped in `\\boxed{}`), `image` (a list of
  paths relative to the unzipped release's root, such as `images/Processed-...-0.jpg`),
  `category`, `source`, `PassRate_32BTrained`, `PassRate_7BBase`. Only the first four are read.
- MathVista: columns `pid`, `question`, `image` (a relative path), `decoded_image` (an image
  struct {bytes, path}), `choices` (a list, or null for free-form items), `unit`, `precision`
  (float64, or null), `answer`, `question_type`, `answer_type` (integer, float, text, list),
  `metadata`, `query` (the question with its hint and choices, the prompt MathVista intends).

Choices: hiccr's LLaVA takes exactly one image per prompt, so a row with no image or with more
than one is left out, and each such row gets a skip note saying why (nothing is dropped
silently). An image is kept as the encoded file bytes as released (PNG/JPEG), not decoded:
decoding and resizing are the processor's job. An image may come as a path string or as an
image struct {bytes, path}; embedded bytes win, else the path is read relative to
`images_root` (default: the parquet file's folder, where unzipping ViRL39K's `images.zip`
puts `images/`). A path that does not exist is an error, not a skip, because it means the
release was unpacked wrongly. ViRL39K's reference is stored unwrapped (`\\boxed{3}` gives `3`)
and its answer type is inferred from the reference (integer, float, or text); its floats carry
no precision, so they compare within a relative tolerance. Questions are kept verbatim
(ViRL39K's may hold an `<image>` placeholder; the prompt builder decides what to do with it).
Rows come back in file order.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reprolab.studies.hiccr.answers import as_number, boxed, normalize

ANSWER_TYPES = ("integer", "float", "text", "list")
VIRL39K_COLUMNS = ("qid", "question", "answer", "image")
MATHVISTA_COLUMNS = (
    "pid",
    "question",
    "decoded_image",
    "choices",
    "precision",
    "answer",
    "answer_type",
)
MATHVISTA_OPTIONAL = ("query", "image")

_INTEGER = re.compile(r"^[+-]?\d+$")


class BenchmarkFormatError(ValueError):
    """A benchmark file that is not in its released format, or whose images cannot be found."""


@dataclass(frozen=True)
class BenchmarkItem:
    """One question with one image, its reference answer, and how answers are compared.

    `answer` is the reference as a string (a MathVista multiple-choice reference is the choice
    text); `choices` is empty for free-form items; `precision` is the number of decimal places
    a float answer is compared at (None: relative tolerance).
    """

    id: str
    question: str
    image: bytes
    answer: str
    choices: tuple[str, ...] = ()
    answer_type: str = "text"
    precision: int | None = None


def _read_table(
    path: Path, required: tuple[str, ...], optional: tuple[str, ...] = ()
) -> list[dict[str, Any]]:
    """The required (and present optional) columns of a parquet file, checked before reading."""
    import pyarrow.parquet as pq

    if not path.is_file():
        raise BenchmarkFormatError(f"{path}: no such file")
    try:
        parquet = pq.ParquetFile(path)
        found = list(parquet.schema_arrow.names)
    except Exception as error:  # pyarrow raises several types for a file it cannot parse
        raise BenchmarkFormatError(f"{path}: not a readable parquet file ({error})") from error
    missing = [name for name in required if name not in found]
    if missing:
        raise BenchmarkFormatError(
            f"{path}: missing column(s) {', '.join(missing)}; columns found: {', '.join(found)}"
        )
    columns = list(required) + [name for name in optional if name in found]
    try:
        return parquet.read(columns=columns).to_pylist()
    except Exception as error:
        raise BenchmarkFormatError(f"{path}: could not read columns {columns} ({error})") from error


def _image_bytes(entry: Any, root: Path, where: str) -> bytes | None:
    """Encoded bytes of one image given as a path string or a struct {bytes, path}.

    Embedded bytes are used as they are; a path is read relative to root. None when the entry
    holds neither; a path that does not exist raises.
    """
    if isinstance(entry, dict):
        data = entry.get("bytes")
        if data:
            return bytes(data)
        entry = entry.get("path")
    if isinstance(entry, bytes | bytearray):
        return bytes(entry) or None
    if not isinstance(entry, str) or not entry.strip():
        return None
    file = root / entry
    if not file.is_file():
        raise BenchmarkFormatError(f"{where}: image {entry!r} not found (looked at {file})")
    return file.read_bytes()


def _infer_answer_type(answer: str) -> str:
    """integer for a whole number, float for any other number (decimal, fraction), else text."""
    spelled = normalize(answer)
    if _INTEGER.match(spelled):
        return "integer"
    return "float" if as_number(answer) is not None else "text"


def _root(path: Path, images_root: str | Path | None) -> Path:
    return Path(images_root) if images_root is not None else path.parent


def read_virl39k(
    path: str | Path, images_root: str | Path | None = None
) -> tuple[list[BenchmarkItem], list[str]]:
    """ViRL39K's items with exactly one image, and a note for each row left out.

    `images_root` is the folder the `image` paths are relative to (default: the parquet file's
    folder). The reference is the content of the answer's `\\boxed{}` (the answer as written when
    it has none); a row whose box never closes, or whose answer is empty, is left out with a note.
    """
    path = Path(path)
    root = _root(path, images_root)
    items: list[BenchmarkItem] = []
    skipped: list[str] = []
    for index, row in enumerate(_read_table(path, VIRL39K_COLUMNS)):
        ident = str(row["qid"])
        where = f"{path.name} row {index} (qid {ident})"
        images = row["image"]
        if images is None:
            images = []
        elif isinstance(images, str | dict):
            images = [images]
        if len(images) != 1:
            reason = "no image" if not images else f"{len(images)} images"
            skipped.append(f"{where}: {reason}; hiccr's LLaVA takes exactly one image per prompt")
            continue
        raw = str(row["answer"] or "")
        answer = boxed(raw)
        if answer is None and re.search(r"\\(?:boxed|fbox)", raw):
            skipped.append(f"{where}: its answer's \\boxed{{}} is not closed: {raw!r}")
            continue
        answer = (answer if answer is not None else raw).strip()
        if not answer:
            skipped.append(f"{where}: empty answer")
            continue
        image = _image_bytes(images[0], root, where)
        if image is None:
            skipped.append(f"{where}: its image entry holds neither bytes nor a path")
            continue
        items.append(
            BenchmarkItem(
                id=ident,
                question=str(row["question"]),
                image=image,
                answer=answer,
                answer_type=_infer_answer_type(answer),
            )
        )
    return items, skipped


def _precision(value: Any, where: str) -> int | None:
    """MathVista's float64 precision as a whole number of decimal places (None when null)."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    if not float(value).is_integer() or float(value) < 0:
        raise BenchmarkFormatError(f"{where}: precision {value!r} is not a number of places")
    return int(value)


def read_mathvista(
    path: str | Path, images_root: str | Path | None = None
) -> tuple[list[BenchmarkItem], list[str]]:
    """MathVista's items (testmini, or any split file of the release), and a note per row left out.

    The question is the released `query` (hint, question and choices, as MathVista prompts) when
    that column is present and the row's query is not empty, else `question`. The image is
    `decoded_image`'s embedded bytes; without them, its path (or the `image` column's) is read
    relative to `images_root` (default: the parquet file's folder). A row with no image at all
    is left out with a note. An answer type outside integer/float/text/list is an error.
    """
    path = Path(path)
    root = _root(path, images_root)
    items: list[BenchmarkItem] = []
    skipped: list[str] = []
    for index, row in enumerate(_read_table(path, MATHVISTA_COLUMNS, MATHVISTA_OPTIONAL)):
        ident = str(row["pid"])
        where = f"{path.name} row {index} (pid {ident})"
        image = None
        for entry in (row["decoded_image"], row.get("image")):
            if entry is not None:
                image = _image_bytes(entry, root, where)
                if image is not None:
                    break
        if image is None:
            skipped.append(f"{where}: no image; hiccr's LLaVA takes exactly one image per prompt")
            continue
        answer_type = row["answer_type"]
        if answer_type not in ANSWER_TYPES:
            raise BenchmarkFormatError(
                f"{where}: answer_type {answer_type!r}, expected one of {', '.join(ANSWER_TYPES)}"
            )
        query = row.get("query")
        items.append(
            BenchmarkItem(
                id=ident,
                question=str(query) if query else str(row["question"]),
                image=image,
                answer=str(row["answer"]),
                choices=tuple(str(choice) for choice in row["choices"] or ()),
                answer_type=answer_type,
                precision=_precision(row["precision"], where),
            )
        )
    return items, skipped
