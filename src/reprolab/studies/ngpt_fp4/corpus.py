"""ngpt_fp4's text corpus: the English docstrings of a fixed list of standard-library modules.

The character-level GPT and nGPT models of the study train on prose that ships with Python
itself, so the corpus needs no download, no licence beyond Python's own and no network on a
compute node. `build_corpus` reads the source files of the modules of `STDLIB_MODULES` in
their listed order and takes the docstring of each module, then of its public classes and
functions (sorted by name) and of each class's public methods (sorted by name). The text is
printable ASCII plus newlines; under CPython 3.11.7 it is about 0.60 MB with a vocabulary of
96 characters, and it builds in well under a second.

The text is deterministic for a given Python version, but docstrings change between Python
releases, so the workflow builds it once, writes it with `write_corpus` (whose header records
the Python version it came from and the sha256 of the body) and DVC versions that file; every
later step reads it with `read_corpus` rather than building it again.

At paper scale the study trains on a real corpus instead, one the user puts in a folder:
FineWeb-Edu as the Hugging Face hub releases it (Parquet files with a `text` column, such as
`sample/10BT/000_00000.parquet`) or plain `.txt` files. `corpus_from_folder` reads the first
`max_chars` characters of such a folder, cleaned to printable ASCII as the docstrings are, and
the result is written with `write_corpus` and read back with `read_corpus` like the smoke
corpus.

`char_vocabulary`, `encode` and `decode` turn the text into byte-sized token ids and back, and
`split_corpus` holds out the contiguous tail of the token stream for validation.
"""

from __future__ import annotations

import ast
import hashlib
import logging
import re
import sys
import sysconfig
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from reprolab.core.io import atomic_path

LOG = logging.getLogger(__name__)

STDLIB_MODULES: tuple[str, ...] = (
    "abc",
    "argparse",
    "ast",
    "asyncio.events",
    "asyncio.locks",
    "asyncio.streams",
    "asyncio.tasks",
    "base64",
    "bdb",
    "calendar",
    "cmd",
    "code",
    "codecs",
    "collections",
    "configparser",
    "contextlib",
    "csv",
    "dataclasses",
    "datetime",
    "difflib",
    "doctest",
    "email.headerregistry",
    "email.message",
    "email.utils",
    "fileinput",
    "fractions",
    "ftplib",
    "functools",
    "heapq",
    "http.client",
    "http.cookiejar",
    "http.cookies",
    "http.server",
    "imaplib",
    "importlib.metadata",
    "inspect",
    "ipaddress",
    "json",
    "json.decoder",
    "locale",
    "logging",
    "logging.handlers",
    "mailbox",
    "mimetypes",
    "optparse",
    "pathlib",
    "pdb",
    "pickle",
    "pickletools",
    "pkgutil",
    "platform",
    "pprint",
    "pydoc",
    "queue",
    "random",
    "re",
    "selectors",
    "shutil",
    "smtplib",
    "socketserver",
    "statistics",
    "string",
    "subprocess",
    "tarfile",
    "tempfile",
    "textwrap",
    "threading",
    "timeit",
    "tokenize",
    "traceback",
    "unittest.case",
    "unittest.mock",
    "urllib.parse",
    "urllib.request",
    "uuid",
    "weakref",
    "xml.dom.minidom",
    "xml.etree.ElementTree",
    "xmlrpc.client",
    "zipfile",
)
"""The pure-Python standard-library modules whose docstrings make the corpus, in build order.

Each is a pure-Python source file of CPython 3.11's standard library on Linux; the corpus reads
the files and imports none of them."""

HEADER = re.compile(r"# reprolab ngpt_fp4 corpus; python (\d+\.\d+\.\d+); sha256 ([0-9a-f]{64})")
"""The first line of a corpus file; the rest of the file is the body, UTF-8 encoded."""


FOLDER_SUFFIXES: tuple[str, ...] = (".parquet", ".txt")
"""The kinds of file `corpus_from_folder` reads: Parquet with a `text` column, UTF-8 text."""

_TEXT_CHUNK_CHARS = 1 << 22
"""How many characters `corpus_from_folder` reads from a `.txt` file at a time."""


@dataclass(frozen=True, eq=False)
class CorpusSplit:
    """The token stream cut in two: `train` is the head and `val` the contiguous tail."""

    train: np.ndarray
    val: np.ndarray


def _printable_ascii(text: str) -> str:
    """`text` decomposed by NFKD (so an accented letter keeps its base letter) with everything
    but printable ASCII and newlines dropped (the remaining accents, box-drawing characters)."""
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(ch for ch in decomposed if ch == "\n" or " " <= ch <= "~")


def module_source(name: str, root: Path | None = None) -> Path:
    """The source file of standard-library module `name` under `root` (the running Python's
    stdlib folder by default), found without importing it: frozen modules such as `abc` have
    their source there too. ValueError when there is none (a built-in or C extension)."""
    base = (root or Path(sysconfig.get_path("stdlib"))) / name.replace(".", "/")
    for path in (base.with_suffix(".py"), base / "__init__.py"):
        if path.is_file():
            return path
    raise ValueError(f"module {name!r} has no Python source file under {base.parent}")


def _public(node: ast.stmt) -> bool:
    """Whether a statement defines a public class or function."""
    definitions = (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    return isinstance(node, definitions) and not node.name.startswith("_")


def _source_docs(tree: ast.Module) -> list[str | None]:
    """The docstrings of a module's syntax tree: the module's, then its public top-level
    classes' and functions' (sorted by name), each class followed by its public methods'
    (sorted by name); None where a definition has none."""
    docs = [ast.get_docstring(tree, clean=True)]
    for node in sorted(filter(_public, tree.body), key=lambda n: n.name):
        docs.append(ast.get_docstring(node, clean=True))
        if isinstance(node, ast.ClassDef):
            methods = sorted(filter(_public, node.body), key=lambda n: n.name)
            docs += [ast.get_docstring(method, clean=True) for method in methods]
    return docs


def build_corpus(modules: tuple[str, ...] = STDLIB_MODULES, root: Path | None = None) -> str:
    """The corpus text built from the docstrings of `modules`, in their order.

    Docstrings are read from each module's source file (`ast`, cleaned as `inspect.cleandoc`
    does), never from the imported module, so what the running process has imported or
    patched cannot change the text (torch, for one, replaces `inspect.getfile`), and a function
    that CPython replaces by a C version keeps its documented Python definition. Each
    docstring is decomposed by NFKD and stripped of all but printable ASCII and newlines.
    Docstrings are separated by a blank line; an empty one, or one that repeats a docstring
    already taken, is skipped. The result ends with a newline. `root`: another folder of
    sources laid out as the standard library (tests).
    """
    taken: dict[str, None] = {}
    for name in modules:
        tree = ast.parse(module_source(name, root).read_text(encoding="utf-8"))
        for doc in _source_docs(tree):
            text = _printable_ascii(doc or "").strip()
            if text:
                taken.setdefault(text)
    return "\n\n".join(taken) + "\n"


def _folder_files(root: Path) -> list[Path]:
    """The `.parquet` and `.txt` files under `root` and its subfolders, sorted by their path
    relative to `root` taken as a tuple of names (so a folder's files stay together whatever
    characters the names hold). The suffix must be lowercase."""
    files = (p for p in root.rglob("*") if p.suffix in FOLDER_SUFFIXES and p.is_file())
    return sorted(files, key=lambda p: p.relative_to(root).parts)


def _parquet_documents(path: Path) -> Iterator[list[str]]:
    """The cleaned, stripped rows of the `text` column of the Parquet file at `path`, each as
    a one-piece document; empty and null rows are skipped.

    The file is read one record batch at a time (`iter_batches`, at most a row group each), so
    a large shard is never loaded whole. Raises ValueError naming the file when it has no
    string column named `text` (naming the columns it has) or pyarrow cannot read it.
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        with pq.ParquetFile(path) as parquet:
            schema = parquet.schema_arrow
            if "text" not in schema.names:
                raise ValueError(f"{path}: no 'text' column; its columns are {schema.names}")
            kind = schema.field("text").type
            if not (
                pa.types.is_string(kind)
                or pa.types.is_large_string(kind)
                or pa.types.is_string_view(kind)
            ):
                raise ValueError(f"{path}: the 'text' column holds {kind}, not strings")
            for batch in parquet.iter_batches(columns=["text"]):
                for row in batch.column(0).to_pylist():
                    text = _printable_ascii(row or "").strip()
                    if text:
                        yield [text]
    except (pa.ArrowException, OSError) as exc:
        raise ValueError(f"{path}: not a readable Parquet file ({exc})") from exc


def _text_pieces(path: Path) -> Iterator[str]:
    """The UTF-8 text file at `path`, cleaned and stripped as one document, in non-empty pieces
    of about `_TEXT_CHUNK_CHARS` characters, so a large file is never loaded whole.

    Cleaning piece by piece gives the same text as cleaning the whole file: NFKD decomposes
    each character on its own and only reorders combining marks, which are dropped. Line ends
    are read as Python's text mode reads them (CRLF and a lone CR become a newline). Raises
    ValueError naming the file when it is not valid UTF-8 (up to the point the corpus reads).
    """
    pending = ""  # cleaned whitespace held back until more text follows it
    started = False
    try:
        with path.open(encoding="utf-8") as stream:
            while chunk := stream.read(_TEXT_CHUNK_CHARS):
                piece = _printable_ascii(chunk)
                if not started:
                    piece = piece.lstrip()
                    started = bool(piece)
                body = piece.rstrip()
                if body:
                    yield pending + body
                    pending = piece[len(body) :]
                else:
                    pending += piece
    except UnicodeDecodeError as exc:
        bad = exc.object[exc.start : exc.end]
        raise ValueError(f"{path}: not valid UTF-8 ({exc.reason}: {bad!r})") from exc


def _folder_documents(files: list[Path]) -> Iterator[Iterable[str]]:
    """The documents of `files` in order, each an iterable of text pieces: a Parquet file's
    non-empty rows, then a text file as one document."""
    for path in files:
        if path.suffix == ".parquet":
            yield from _parquet_documents(path)
        else:
            yield _text_pieces(path)


def corpus_from_folder(folder: str | Path, max_chars: int) -> str:
    """The first `max_chars` characters of the documents in `folder`: the paper-scale corpus.

    Reads every `.parquet` file (each non-empty row of its `text` column is a document, as in
    FineWeb-Edu's shards) and every `.txt` file (UTF-8, one document each) in `folder` and its
    subfolders, in sorted relative-path order. Each document is decomposed by NFKD, stripped of
    all but printable ASCII and newlines, as `build_corpus` does, and of surrounding
    whitespace; empty ones are skipped, and unlike `build_corpus` repeats are kept (a real
    corpus is too large to hold every document seen). Documents are separated by a blank line.
    Reading stops once `max_chars` characters are collected and the text is cut at exactly
    `max_chars`, so it is the same for the same files however they are batched; it is shorter
    only when the folder holds less. Files after the cut are not opened. Write the result
    with `write_corpus`.

    Raises ValueError when `max_chars` < 1; when `folder` is not a folder or holds no
    `.parquet` or `.txt` file; when they hold no text; and naming the file when a Parquet file
    has no `text` column of strings or cannot be read as Parquet, or a text file is not UTF-8.
    """
    if max_chars < 1:
        raise ValueError(f"max_chars must be at least 1, got {max_chars}")
    root = Path(folder)
    if not root.is_dir():
        reason = "not a folder" if root.exists() else "no such folder"
        raise ValueError(f"{root}: {reason}; expected a folder of .parquet or .txt files")
    files = _folder_files(root)
    if not files:
        raise ValueError(f"{root}: no .parquet or .txt files in it or its subfolders")
    parts: list[str] = []
    size = 0
    for document in _folder_documents(files):
        separator = "\n\n" if size else ""
        for piece in document:
            parts.append((separator + piece)[: max_chars - size])
            separator = ""
            size += len(parts[-1])
            if size == max_chars:
                return "".join(parts)
    if not size:
        raise ValueError(f"{root}: its .parquet and .txt files hold no text")
    return "".join(parts)


def char_vocabulary(text: str) -> str:
    """The distinct characters of `text`, sorted by code point: the character at index i is
    token id i."""
    return "".join(sorted(set(text)))


def encode(text: str, vocabulary: str) -> np.ndarray:
    """`text` as uint8 token ids, the index of each character in `vocabulary`.

    Raises ValueError naming the first character that is not in the vocabulary, or when the
    vocabulary has repeated characters or more than 256 of them.
    """
    if len(set(vocabulary)) != len(vocabulary) or len(vocabulary) > 256:
        raise ValueError("the vocabulary must hold at most 256 distinct characters")
    ids = {ch: i for i, ch in enumerate(vocabulary)}
    try:
        return np.fromiter((ids[ch] for ch in text), dtype=np.uint8, count=len(text))
    except KeyError as exc:
        raise ValueError(f"character {exc.args[0]!r} is not in the vocabulary") from None


def decode(tokens: np.ndarray, vocabulary: str) -> str:
    """The text of the token ids `tokens`, inverting `encode`."""
    return "".join(vocabulary[i] for i in np.asarray(tokens).tolist())


def split_corpus(tokens: np.ndarray, val_share: float = 0.05) -> CorpusSplit:
    """Hold out the last `val_share` of the token stream (rounded) for validation.

    The validation part is the contiguous tail, not a shuffled sample of windows, so every
    docstring but the one straddling the cut lies wholly in one part and training never sees the
    prose it is validated on. The tail is the docstrings of the last modules of the list (a
    held-out set of modules rather than a sample of all of them). Raises ValueError when
    `tokens` is not one-dimensional or either part would be empty.
    """
    tokens = np.asarray(tokens)
    if tokens.ndim != 1:
        raise ValueError(f"tokens must be one-dimensional, got shape {tokens.shape}")
    n_val = round(len(tokens) * val_share)
    if not 0 < n_val < len(tokens):
        raise ValueError(
            f"val_share {val_share} of {len(tokens)} tokens leaves an empty train or val part"
        )
    return CorpusSplit(train=tokens[:-n_val], val=tokens[-n_val:])


def write_corpus(path: str | Path, text: str) -> None:
    """Write `text` atomically to `path` behind a header recording the running Python's version
    and the sha256 of the UTF-8 body (call it in the process that built the text)."""
    body = text.encode("utf-8")
    version = ".".join(str(part) for part in sys.version_info[:3])
    digest = hashlib.sha256(body).hexdigest()
    header = f"# reprolab ngpt_fp4 corpus; python {version}; sha256 {digest}"
    with atomic_path(path) as tmp:
        tmp.write_bytes(header.encode("ascii") + b"\n" + body)


def read_corpus(path: str | Path) -> tuple[str, str]:
    """The body of the corpus file at `path` and the Python version that built it.

    Raises ValueError naming the file when its first line is not a corpus header or the body's
    sha256 differs from the one the header records.
    """
    first, _, body = Path(path).read_bytes().partition(b"\n")
    match = HEADER.fullmatch(first.decode("ascii", errors="replace"))
    if match is None:
        raise ValueError(f"{path}: no '# reprolab ngpt_fp4 corpus' header on the first line")
    version, recorded = match.groups()
    actual = hashlib.sha256(body).hexdigest()
    if actual != recorded:
        raise ValueError(f"{path}: body has sha256 {actual}, the header records {recorded}")
    return body.decode("utf-8"), version


def write_study_corpus(spec: dict[str, Any], path: str | Path) -> None:
    """Write the corpus params `corpus` names to `path`: `source` "stdlib" builds the docstring
    corpus, "folder" reads the first `max_chars` characters of the text folder `folder`."""
    if spec["source"] == "stdlib":
        text = build_corpus()
    elif spec["source"] == "folder":
        text = corpus_from_folder(spec["folder"], spec["max_chars"])
    else:
        raise ValueError(
            f"ngpt_fp4.corpus.source: {spec['source']!r}; expected 'stdlib' or 'folder'"
        )
    write_corpus(path, text)
    LOG.info("%s: %d characters, %d distinct", path, len(text), len(set(text)))
