"""The corpus: standard-library docstrings, ASCII, reproducible, encoded, split and stored."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys

import numpy as np
import pytest

from reprolab.studies.ngpt_fp4.corpus import (
    STDLIB_MODULES,
    build_corpus,
    char_vocabulary,
    decode,
    encode,
    module_source,
    read_corpus,
    split_corpus,
    write_corpus,
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
