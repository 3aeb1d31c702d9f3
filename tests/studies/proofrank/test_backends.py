"""The retrieval backends: seeded, in the technique asked for, non-compliant at the rate set."""

from __future__ import annotations

import pytest

from reprolab.studies.proofrank.backends import (
    NoncompliantBackend,
    RetrievalBackend,
    VerboseBackend,
    techniques_of,
)
from reprolab.studies.proofrank.corpus import Proof, Theorem


def proof(letter: str, technique: str, words: int, correct: bool = True) -> Proof:
    text = " ".join(["word"] * words) + "\nThis completes the proof."
    return Proof(f"t-{letter}", technique, correct, "test", text, None if correct else "wrong")


THEOREM = Theorem(
    "t",
    "algebra",
    "s",
    (
        proof("a", "induction", 10),
        proof("b", "induction", 4),
        proof("c", "direct", 6),
        proof("d", "parity", 3, correct=False),
    ),
)
TEXT = {p.text: p for p in THEOREM.proofs}


def test_best_retrieval_returns_the_top_scored_proof_in_the_technique_asked_for():
    shortest = RetrievalBackend("best", lambda p, t: -len(p.text) if p.correct else -1e9)
    assert shortest.generate(THEOREM, "induction", 2, seed=0) == [THEOREM.proofs[1].text] * 2
    assert shortest.generate(THEOREM, None, 1, seed=0) == [THEOREM.proofs[1].text]
    assert shortest.generate(THEOREM, "counting", 1, seed=0) == [THEOREM.proofs[1].text]


def test_random_retrieval_repeats_by_seed_and_keeps_to_the_technique():
    backend = RetrievalBackend("random")
    drawn = backend.generate(THEOREM, "induction", 20, seed=1)
    assert drawn == backend.generate(THEOREM, "induction", 20, seed=1)
    assert {TEXT[t].technique for t in drawn} == {"induction"}
    free = backend.generate(THEOREM, None, 60, seed=2)
    assert any(not TEXT[t].correct for t in free)  # incorrect proofs are drawn too


def test_a_noncompliant_backend_answers_in_another_technique_at_its_rate():
    drawn = NoncompliantBackend(0.3).generate(THEOREM, "induction", 2000, seed=3)
    share = sum(TEXT[t].technique != "induction" for t in drawn) / len(drawn)
    assert share == pytest.approx(0.3, abs=0.03)
    assert all(
        TEXT[t].technique == "induction"
        for t in NoncompliantBackend(0.0).generate(THEOREM, "induction", 50, seed=3)
    )
    with pytest.raises(ValueError, match="must lie in"):
        NoncompliantBackend(1.5)


def test_a_verbose_backend_pads_what_another_returns():
    inner = RetrievalBackend("random")
    plain = inner.generate(THEOREM, "direct", 3, seed=4)
    padded = VerboseBackend(inner).generate(THEOREM, "direct", 3, seed=4)
    for short, long in zip(plain, padded, strict=True):
        assert len(long.split()) >= 2 * len(short.split())
    assert techniques_of(THEOREM) == ["direct", "induction"]
