"""CIDEr-D on captions worked out by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest

from reprolab.studies.vngct.cider import cider_d, ngram_counts, tokenize


def test_tokenize_lowercases_and_drops_punctuation():
    assert tokenize("A dog, running.") == ["a", "dog", "running"]


def test_ngram_counts_go_up_to_four_words():
    counts = ngram_counts("a a b")
    assert counts[("a",)] == 2 and counts[("a", "a", "b")] == 1
    assert max(len(gram) for gram in counts) == 3
    assert max(len(gram) for gram in ngram_counts("one two three four five")) == 4


def test_cider_d_of_two_tiny_captions_by_hand():
    """Two items, one reference each; N = 2, so idf = ln 2 − ln df.

    "a" is in both references (idf 0); every other n-gram in one (idf ln 2).
    Item 1, "a dog runs" against itself: cosine 1 for n = 1, 2, 3, no 4-gram (0), same length:
    10 · (1 + 1 + 1 + 0) / 4 = 7.5.
    Item 2, "a cat" against "a cat sleeps": unigrams (0, ln2) · (0, ln2, ln2) / (ln2 · √2 ln2)
    = 1/√2; bigrams (a cat) against (a cat, cat sleeps): 1/√2; no 3- or 4-gram; lengths (bigram
    counts) 1 and 2, so the penalty is exp(−1/72): 10 · (2/√2) / 4 · exp(−1/72).
    """
    scores = cider_d(["a dog runs", "a cat"], [["a dog runs"], ["a cat sleeps"]])
    second = 10 * (2 / math.sqrt(2)) / 4 * math.exp(-1 / 72)
    np.testing.assert_allclose(scores, [7.5, second])
    assert second == pytest.approx(3.48677, abs=1e-5)


def test_cider_d_averages_over_references_and_ignores_candidate_only_words():
    one = cider_d(["a dog runs", "a cat"], [["a dog runs"], ["a cat sleeps"]])
    # a second reference for item 1 changes the document frequencies and adds a similarity
    two = cider_d(["a dog runs", "a cat"], [["a dog runs", "dogs"], ["a cat sleeps"]])
    assert two[0] == pytest.approx(7.5 / 2)  # "dogs" shares nothing with the candidate
    assert two[1] == pytest.approx(one[1])
    assert cider_d(["zebra", "a cat"], [["a dog runs"], ["a cat sleeps"]])[0] == 0.0


def test_cider_d_refuses_missing_references():
    with pytest.raises(ValueError, match="item 1 has no reference caption"):
        cider_d(["a", "b"], [["a"], []])
    with pytest.raises(ValueError, match="2 candidates for 1 reference sets"):
        cider_d(["a", "b"], [["a"]])
