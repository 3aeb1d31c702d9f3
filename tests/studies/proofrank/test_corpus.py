"""The corpus format: a good file reads whole, a bad line is named (file, line, id) and the
rest is read, and the bundled corpus is clean and labelled as the format says."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from reprolab.studies.proofrank.corpus import TECHNIQUES, bundled_files, corpus_text, read_corpus
from reprolab.studies.proofrank.text import unparsed


def proof(proof_id: str, technique: str = "direct", correct: bool = True, **extra) -> dict:
    return {
        "proof_id": proof_id,
        "technique": technique,
        "correct": correct,
        "author": "test",
        "text": "Then $1 + 1 = 2$.\nThis completes the proof.",
        **extra,
    }


def theorem(theorem_id: str, *proofs: dict) -> dict:
    return {"theorem_id": theorem_id, "topic": "t", "statement": "s", "proofs": list(proofs)}


def test_bad_lines_are_named_and_the_rest_is_read(tmp_path: Path):
    lines = [
        json.dumps(theorem("t-1", proof("t-1-a"), proof("t-1-b", "parity"))),
        "{not json",
        json.dumps(theorem("t-2", proof("t-2-a", "magic"))),
        json.dumps({"theorem_id": "t-3", "topic": "t", "statement": "s"}),
        json.dumps(theorem("t-4", proof("t-4-a", correct=False))),  # incorrect without a flaw
        json.dumps(theorem("t-1", proof("t-5-a"))),  # an id seen before
        "",
        json.dumps(theorem("t-6", proof("t-6-a", correct=False, flaw="a step is wrong"))),
    ]
    path = tmp_path / "part.jsonl"
    path.write_text("\n".join(lines) + "\n")
    theorems, problems = read_corpus([path])
    assert [t.theorem_id for t in theorems] == ["t-1", "t-6"]
    assert theorems[1].proofs[0].flaw == "a step is wrong"
    found = {(p.line, p.item): p.message for p in problems}
    assert set(found) == {(2, None), (3, "t-2"), (4, "t-3"), (5, "t-4"), (6, "t-1")}
    assert "not valid JSON" in found[(2, None)]
    assert "technique 'magic'" in found[(3, "t-2")]
    assert "missing key(s) ['proofs']" in found[(4, "t-3")]
    assert "flaw" in found[(5, "t-4")] and "seen twice" in found[(6, "t-1")]
    assert str(problems[0]).startswith(f"{path}:2: ")


def test_the_bundled_corpus_reads_clean_and_covers_every_technique():
    files = bundled_files()
    if not files:
        pytest.skip("the bundled corpus is not written yet")
    theorems, problems = read_corpus(files)
    assert not problems, [str(p) for p in problems]
    proofs = [p for t in theorems for p in t.proofs]
    counts = Counter(p.technique for p in proofs if p.correct)
    assert set(counts) == set(TECHNIQUES) and min(counts.values()) >= 5
    assert all(sum(p.correct for p in t.proofs) >= 2 for t in theorems)
    assert 0 < sum(not p.correct for p in proofs) < len(proofs) / 5
    assert not [p.proof_id for p in proofs if unparsed(p.text)]  # every expression parses


def test_an_unparsable_expression_is_reported_and_its_proof_kept(tmp_path: Path):
    odd = proof("t-1-a") | {"text": "Then $2 @ 3$ holds.\nThis completes the proof."}
    path = tmp_path / "odd.jsonl"
    path.write_text(json.dumps(theorem("t-1", odd)) + "\n")
    theorems, problems = read_corpus([path])
    assert [t.theorem_id for t in theorems] == ["t-1"]
    assert [(p.line, p.item) for p in problems] == [(1, "t-1-a")]
    assert "2 @ 3" in problems[0].message and str(path) in str(problems[0])


def test_a_corpus_written_back_reads_the_same(tmp_path: Path):
    theorems, _ = read_corpus(bundled_files())
    path = tmp_path / "all.jsonl"
    path.write_text(corpus_text(theorems))
    assert read_corpus([path]) == (theorems, [])
