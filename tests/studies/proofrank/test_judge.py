"""The smoke judge: exact on the corpus, blind to padding, conservative on anything else."""

from __future__ import annotations

import numpy as np
import pytest

from reprolab.studies.proofrank.corpus import Proof, Theorem, bundled_files, read_corpus
from reprolab.studies.proofrank.judge import ReferenceJudge, content
from reprolab.studies.proofrank.perturb import padding

RIGHT = Proof("t-a", "parity", True, "test", "Let $n = 2*k$.\nThen $n^2 = 4*k^2$ is even.")
WRONG = Proof("t-b", "parity", False, "test", "Let $n = 2*k$.\nThen $n^2 = 2*k^2$ is even.", "x")
THEOREM = Theorem("t", "number theory", "The square of an even number is even.", (RIGHT, WRONG))


def test_the_judge_is_exact_on_the_bundled_corpus():
    theorems, _ = read_corpus(bundled_files())
    judge = ReferenceJudge(0.9)
    items = [(t, p.text) for t in theorems for p in t.proofs]
    verdicts = judge.judge_batch(items)
    assert verdicts == [p.correct for t in theorems for p in t.proofs]


def test_padding_is_not_content_and_keeps_a_correct_proof_correct():
    padded = padding(RIGHT, THEOREM, np.random.default_rng(0))
    assert content(padded) == content(RIGHT.text)
    assert ReferenceJudge(0.9).judge(THEOREM, padded)


def test_a_text_nearer_a_flawed_proof_or_far_from_every_proof_is_incorrect():
    judge = ReferenceJudge(0.5)
    assert not judge.judge(THEOREM, WRONG.text)  # equally near: the flawed one wins the tie
    assert not judge.judge(THEOREM, "A proof the corpus has never seen.")
    assert not judge.judge(THEOREM, RIGHT.text.replace("2*k$", "2 k @$"))  # does not parse


def test_the_threshold_must_be_a_similarity():
    with pytest.raises(ValueError, match="threshold"):
        ReferenceJudge(0.0)
