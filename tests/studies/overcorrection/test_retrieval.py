"""The BM25 retriever: its scores are the Okapi BM25 formula computed text by text, a text without
a query word scores 0, `top` orders by score with ties to the lower index and returns every text
when asked for more."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from reprolab.studies.overcorrection.retrieval import BM25Index

CORPUS = [
    "The cat sat on the mat.",
    "A dog chased the cat; the cat ran up a tree.",
    "Paris is the capital of France",
    "Dogs and cats are common pets, dogs more so",
]


def direct_bm25(texts: list[str], query: str, k1: float, b: float) -> list[float]:
    """BM25 written out per text and per query word, with its own tokenizer."""
    docs = [re.findall(r"\b\w+\b", text.lower()) for text in texts]
    avgdl = sum(len(doc) for doc in docs) / len(docs)
    scores = []
    for doc in docs:
        score = 0.0
        for word in re.findall(r"\b\w+\b", query.lower()):
            df = sum(word in other for other in docs)
            if df == 0:
                continue
            idf = math.log(1 + (len(docs) - df + 0.5) / (df + 0.5))
            tf = doc.count(word)
            score += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * len(doc) / avgdl))
        scores.append(score)
    return scores


@pytest.mark.parametrize("k1, b", [(0.9, 0.4), (1.2, 0.75)])
@pytest.mark.parametrize("query", ["cat", "the CAT dogs", "cat cat tree", "capital unicorn"])
def test_scores_are_the_bm25_formula_text_by_text(query, k1, b):
    index = BM25Index.build(CORPUS, k1=k1, b=b)
    scores = index.scores(query)
    assert scores.dtype == np.float64 and scores.shape == (4,)
    np.testing.assert_allclose(scores, direct_bm25(CORPUS, query, k1, b), rtol=1e-12)


def test_the_defaults_are_pyserinis():
    index = BM25Index.build(CORPUS)
    assert (index.k1, index.b) == (0.9, 0.4)


def test_a_text_without_a_query_word_scores_zero():
    scores = BM25Index.build(CORPUS).scores("capital")
    assert scores[2] > 0
    assert scores[[0, 1, 3]].tolist() == [0.0, 0.0, 0.0]
    assert not BM25Index.build(CORPUS).scores("unicorn").any()


def test_top_orders_by_score_and_breaks_ties_by_lower_index():
    index = BM25Index.build(["red fish", "blue", "red fish", "red fish", "red red fish"])
    assert index.top("red", 3).tolist() == [4, 0, 2]
    assert index.top("fish", 5).tolist() == [0, 2, 3, 4, 1]
    assert index.top("green", 2).tolist() == [0, 1]


def test_top_with_a_count_beyond_the_corpus_returns_every_text():
    assert BM25Index.build(CORPUS).top("cat", 10).tolist() == [1, 0, 2, 3]


def test_an_index_needs_a_word():
    with pytest.raises(ValueError, match="needs a text with a word"):
        BM25Index.build(["", "  ...  "])
