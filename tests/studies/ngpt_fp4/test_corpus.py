"""The corpus: standard-library docstrings, ASCII, reproducible, encoded, split and stored."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from reprolab.studies.ngpt_fp4 import corpus as corpus_module
from reprolab.studies.ngpt_fp4.corpus import (
    STDLIB_MODULES,
    build_corpus,
    char_vocabulary,
    corpus_from_folder,
    decode,
    encode,
    module_source,
    read_corpus,
    split_corpus,
    write_corpus,
    write_study_corpus,
)

BUILD_SHA = (
    "import hashlib; from reprolab.studies.ngpt_fp4.corpus import build_corpus; "
    "print(hashlib.sha256(build_corpus().encode()).hexdigest())"
)


@pytest.fixture(scope="module")
def corpus() -> str:
    return build_corpus()


def python(*args: str, hash_seed: str = "0") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env)


def test_every_listed_module_has_a_source_file_and_the_list_has_no_repeats():
    assert len(set(STDLIB_MODULES)) == len(STDLIB_MODULES) >= 60
    for name in STDLIB_MODULES:
        assert module_source(name).suffix == ".py"
    with pytest.raises(ValueError, match="'math' has no Python source file under"):
        module_source("math")


def test_the_corpus_is_substantial_printable_ascii_prose(corpus):
    assert corpus.isascii()
    assert len(corpus) >= 500_000
    assert set(corpus) <= {"\n", *map(chr, range(32, 127))}
    assert corpus.endswith("\n") and not corpus.startswith("\n")
    assert "Return a new" in corpus  # English prose, not code
    assert len(char_vocabulary(corpus)) > 80


def test_the_corpus_is_the_same_in_a_fresh_process_with_another_hash_seed(corpus):
    fresh = python("-c", BUILD_SHA, hash_seed="12345")
    assert fresh.returncode == 0, fresh.stderr
    assert fresh.stdout.strip() == hashlib.sha256(corpus.encode()).hexdigest()
    assert build_corpus() == corpus


def test_what_the_process_imported_or_patched_does_not_change_the_corpus(corpus):
    """torch replaces inspect.getfile when imported; the corpus reads source files."""
    patched = python("-c", f"import torch; {BUILD_SHA}")
    assert patched.returncode == 0, patched.stderr
    assert patched.stdout.strip() == hashlib.sha256(corpus.encode()).hexdigest()


def test_a_module_docstring_comes_first_and_repeated_docstrings_are_kept_once():
    text = build_corpus(("heapq", "heapq"))
    assert text.startswith("Heap queue algorithm")
    assert "\n\nFind the n largest elements in a dataset." in text
    assert text == build_corpus(("heapq",))


def test_non_ascii_is_decomposed_then_dropped(tmp_path):
    source = '"""Caf\u00e9 \u2014 stra\u00dfe\nno\u00a0break\x0c"""\n'
    (tmp_path / "fake_accents.py").write_text(source, encoding="utf-8")
    assert build_corpus(("fake_accents",), tmp_path) == "Cafe  strae\nno break\n"


def test_the_corpus_needs_no_docstrings_at_run_time(corpus):
    """Read from source, the text is the same under `python -OO`, which strips docstrings."""
    stripped = python("-OO", "-c", BUILD_SHA)
    assert stripped.returncode == 0, stripped.stderr
    assert stripped.stdout.strip() == hashlib.sha256(corpus.encode()).hexdigest()


def test_encode_decode_round_trip(corpus):
    vocabulary = char_vocabulary(corpus)
    assert vocabulary == "".join(sorted(set(vocabulary)))
    tokens = encode(corpus, vocabulary)
    assert tokens.dtype == np.uint8 and tokens.shape == (len(corpus),)
    assert int(tokens.max()) == len(vocabulary) - 1
    assert decode(tokens, vocabulary) == corpus


def test_a_character_outside_the_vocabulary_is_named():
    with pytest.raises(ValueError, match="'z' is not in the vocabulary"):
        encode("abz", "ab")
    with pytest.raises(ValueError, match="at most 256 distinct"):
        encode("a", "aa")


def test_the_split_holds_out_the_contiguous_tail():
    tokens = np.arange(200, dtype=np.uint8)
    split = split_corpus(tokens, val_share=0.05)
    assert len(split.train) == 190 and len(split.val) == 10
    np.testing.assert_array_equal(np.concatenate([split.train, split.val]), tokens)
    np.testing.assert_array_equal(split.val, np.arange(190, 200))
    assert len(split_corpus(tokens).val) == 10
    with pytest.raises(ValueError, match="empty"):
        split_corpus(tokens, val_share=0.001)
    with pytest.raises(ValueError, match="one-dimensional"):
        split_corpus(tokens.reshape(10, 20))


def test_write_read_round_trip(tmp_path, corpus):
    path = tmp_path / "data" / "corpus.txt"
    write_corpus(path, corpus)
    header = path.read_text().split("\n", 1)[0]
    version = ".".join(map(str, sys.version_info[:3]))
    assert header.startswith(f"# reprolab ngpt_fp4 corpus; python {version}; sha256 ")
    assert read_corpus(path) == (corpus, version)
    assert [p.name for p in path.parent.iterdir()] == ["corpus.txt"]  # no temporary file left


def test_a_tampered_body_fails_the_sha256_check_naming_the_file(tmp_path):
    path = tmp_path / "corpus.txt"
    write_corpus(path, "Return the text.\n")
    path.write_bytes(path.read_bytes().replace(b"text", b"test"))
    with pytest.raises(
        ValueError, match=rf"{re.escape(str(path))}: body has sha256 .*the header records"
    ):
        read_corpus(path)


def test_a_missing_header_fails_naming_the_file(tmp_path):
    path = tmp_path / "corpus.txt"
    path.write_text("Return the text.\n")
    with pytest.raises(
        ValueError, match=rf"{re.escape(str(path))}: no '# reprolab ngpt_fp4 corpus' header"
    ):
        read_corpus(path)


FOLDER_TEXT = "Cafe one\n\ntwo\n\nthree\n\nfour\n\nfive\n\nsix  end\n\nNotes.\n\nSeven\nlines"
"""What `corpus_from_folder` makes of the folder that `text_folder` writes."""


def write_parquet(path, texts, row_group_size=None, **columns):
    import pyarrow as pa
    import pyarrow.parquet as pq

    path.parent.mkdir(parents=True, exist_ok=True)
    table = pa.table({"id": list(range(len(texts))), "text": texts, **columns})
    pq.write_table(table, path, row_group_size=row_group_size)
    return path


@pytest.fixture
def text_folder(tmp_path):
    """A FineWeb-Edu-like folder: two Parquet shards (the second of two row groups) in
    sample/10BT, a text file beside that folder whose name sorts before it as a string, another
    text file, and a file of another kind."""
    import pyarrow.parquet as pq

    root = tmp_path / "fineweb"
    shards = root / "sample" / "10BT"
    write_parquet(shards / "000_00000.parquet", ["Caf\u00e9 one", "  two\n", None, "", "three"])
    second = write_parquet(
        shards / "000_00001.parquet", ["four", "five", "six \u2014 end"], row_group_size=2
    )
    assert pq.ParquetFile(second).num_row_groups == 2
    (root / "sample-notes.txt").write_text("Notes.\n", encoding="utf-8")
    (root / "z.txt").write_bytes("\ufeff  Seven\r\nlines\n\n".encode())
    (root / "README.md").write_text("Not part of the corpus.\n")
    return root


def test_a_folder_is_read_in_path_order_cleaned_and_joined_by_blank_lines(text_folder):
    assert corpus_from_folder(text_folder, 10_000) == FOLDER_TEXT
    assert corpus_from_folder(str(text_folder), len(FOLDER_TEXT)) == FOLDER_TEXT


def test_the_folder_text_is_cut_at_exactly_max_chars(text_folder):
    for n in range(1, len(FOLDER_TEXT) + 1):
        assert corpus_from_folder(text_folder, n) == FOLDER_TEXT[:n]


def test_the_folder_text_does_not_depend_on_batching_or_chunking(text_folder, monkeypatch):
    shard = text_folder / "sample" / "10BT" / "000_00000.parquet"
    write_parquet(shard, ["Caf\u00e9 one", "  two\n", None, "", "three"], row_group_size=1)
    monkeypatch.setattr(corpus_module, "_TEXT_CHUNK_CHARS", 1)
    first = corpus_from_folder(text_folder, 10_000)
    assert first == FOLDER_TEXT
    assert corpus_from_folder(text_folder, 10_000) == first  # and the same on every read


def test_a_text_file_read_in_chunks_is_cleaned_as_a_whole(tmp_path, monkeypatch):
    text = "\n \u00a0 Cafe\u0301 \r\n\r\n  na\u0308ive\u00a0 \r done \u2014 \n\n "
    (tmp_path / "one.txt").write_text(text, encoding="utf-8", newline="")
    whole = corpus_from_folder(tmp_path, 10_000)
    assert whole == "Cafe \n\n  naive  \n done"
    for chunk in (1, 2, 3, 5):
        monkeypatch.setattr(corpus_module, "_TEXT_CHUNK_CHARS", chunk)
        assert corpus_from_folder(tmp_path, 10_000) == whole


def test_folder_errors_name_the_path_and_what_was_expected(tmp_path, text_folder):
    with pytest.raises(ValueError, match="max_chars must be at least 1, got 0"):
        corpus_from_folder(text_folder, 0)
    missing = tmp_path / "missing"
    with pytest.raises(ValueError, match=rf"{re.escape(str(missing))}: no such folder; expected"):
        corpus_from_folder(missing, 100)
    readme = text_folder / "README.md"
    with pytest.raises(ValueError, match=rf"{re.escape(str(readme))}: not a folder; expected"):
        corpus_from_folder(readme, 100)
    empty = tmp_path / "empty"
    (empty / "sub").mkdir(parents=True)
    (empty / "sub" / "data.csv").write_text("text\nnot read\n")
    with pytest.raises(ValueError, match=rf"{re.escape(str(empty))}: no .parquet or .txt files"):
        corpus_from_folder(empty, 100)
    blank = tmp_path / "blank"
    write_parquet(blank / "a.parquet", ["", None, " \n "])
    (blank / "b.txt").write_text("\u2014\n")
    with pytest.raises(ValueError, match=rf"{re.escape(str(blank))}: .* hold no text"):
        corpus_from_folder(blank, 100)


def test_a_bad_parquet_file_is_named_with_the_reason(tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    no_text = tmp_path / "no_text"
    path = no_text / "a.parquet"
    no_text.mkdir()
    pq.write_table(pa.table({"id": [1], "content": ["hello"]}), path)
    expected = rf"{re.escape(str(path))}: no 'text' column; its columns are \['id', 'content'\]"
    with pytest.raises(ValueError, match=expected):
        corpus_from_folder(no_text, 100)

    numbers = tmp_path / "numbers"
    path = write_parquet(numbers / "a.parquet", ["ignored"], text=[1])
    with pytest.raises(ValueError, match=rf"{re.escape(str(path))}: the 'text' column holds int64"):
        corpus_from_folder(numbers, 100)

    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "a.txt").write_text("Read first.\n")
    path = broken / "b.parquet"
    path.write_bytes(b"PAR1 this is not a Parquet file")
    with pytest.raises(
        ValueError, match=rf"{re.escape(str(path))}: not a readable Parquet file \(.*magic bytes"
    ) as raised:
        corpus_from_folder(broken, 100)
    assert isinstance(raised.value.__cause__, pa.ArrowException)
    assert corpus_from_folder(broken, 5) == "Read "  # the cut comes before the broken file


def test_a_text_file_that_is_not_utf8_is_named_with_the_reason(tmp_path):
    path = tmp_path / "latin1.txt"
    path.write_bytes("Caf\u00e9\n".encode("latin-1"))
    with pytest.raises(
        ValueError, match=rf"{re.escape(str(path))}: not valid UTF-8 \(.*b'\\xe9'\)"
    ) as raised:
        corpus_from_folder(tmp_path, 100)
    assert isinstance(raised.value.__cause__, UnicodeDecodeError)


def test_the_corpus_job_writes_the_source_params_name(tmp_path, text_folder, corpus):
    stdlib = tmp_path / "stdlib.txt"
    write_study_corpus({"source": "stdlib", "val_share": 0.05}, stdlib)
    assert read_corpus(stdlib)[0] == corpus
    folder = tmp_path / "folder.txt"
    spec = {"source": "folder", "folder": str(text_folder), "max_chars": 12, "val_share": 0.05}
    write_study_corpus(spec, folder)
    assert read_corpus(folder)[0] == FOLDER_TEXT[:12]
    with pytest.raises(ValueError, match="ngpt_fp4.corpus.source: 'web'"):
        write_study_corpus({"source": "web"}, tmp_path / "web.txt")
    assert not (tmp_path / "web.txt").exists()
