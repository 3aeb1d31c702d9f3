"""Okapi BM25 over a list of texts: the sparse retriever that picks the passages given to the
model as RAG context.

A text d scores a query q as

    Σ_{t ∈ q} c(t, q) · idf(t) · tf(t, d) (k1 + 1) / (tf(t, d) + k1 (1 − b + b |d| / avgdl))

with idf(t) = log(1 + (N − df(t) + 0.5) / (df(t) + 0.5)) (Lucene's form, never negative), N the
number of texts, df(t) how many contain t, |d| a text's number of tokens, avgdl their mean and
c(t, q) how often t occurs in the query (a repeated query word counts again, as in Pyserini's bag
of words queries). The defaults k1 = 0.9 and b = 0.4 are the values Pyserini uses for its
MS MARCO and Wikipedia indexes.

Tokens come from scikit-learn's CountVectorizer: lower-cased word tokens `(?u)\\b\\w+\\b`
(single characters kept), no stop words, no stemming; a query word absent from the texts adds
nothing. The index keeps the texts' term weights idf(t) · tf (k1 + 1) / (tf + k1 (…)) as a
sparse matrix, so a query costs one sparse product.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy import sparse
from sklearn.feature_extraction.text import CountVectorizer

TOKEN_PATTERN = r"(?u)\b\w+\b"


@dataclass(frozen=True)
class BM25Index:
    """A BM25 index of texts: the fitted tokenizer and the (texts × vocabulary) weights."""

    vectorizer: CountVectorizer
    weights: sparse.csr_matrix
    k1: float
    b: float

    @classmethod
    def build(cls, texts: Sequence[str], k1: float = 0.9, b: float = 0.4) -> BM25Index:
        """Index `texts` (in order: a text's score sits at its index); ValueError if none has a
        word."""
        vectorizer = CountVectorizer(lowercase=True, token_pattern=TOKEN_PATTERN, stop_words=None)
        try:
            counts = sparse.csr_matrix(vectorizer.fit_transform(texts), dtype=np.float64)
        except ValueError as error:  # scikit-learn's "empty vocabulary"
            raise ValueError(f"BM25Index.build needs a text with a word ({error})") from None
        return cls(vectorizer, bm25_weights(counts, k1, b), k1, b)

    def scores(self, query: str) -> np.ndarray:
        """Every text's BM25 score for `query`, float64, in the texts' order."""
        query_counts = self.vectorizer.transform([query]).astype(np.float64)
        return np.asarray((self.weights @ query_counts.T).todense(), dtype=np.float64).ravel()

    def top(self, query: str, count: int) -> np.ndarray:
        """The indices of the `count` best texts for `query` (all if there are fewer), by
        descending score; equal scores keep the lower index first (a stable sort)."""
        if count < 0:
            raise ValueError(f"count must be at least 0, not {count}")
        return np.argsort(-self.scores(query), kind="stable")[:count]


def bm25_weights(counts: sparse.csr_matrix, k1: float, b: float) -> sparse.csr_matrix:
    """The BM25 weight idf(t) · tf (k1 + 1) / (tf + k1 (1 − b + b |d| / avgdl)) of every term of
    every text, from the (texts × vocabulary) term counts."""
    texts = counts.shape[0]
    lengths = np.asarray(counts.sum(axis=1)).ravel()
    df = np.bincount(counts.indices, minlength=counts.shape[1])
    idf = np.log1p((texts - df + 0.5) / (df + 0.5))
    rows = np.repeat(np.arange(texts), np.diff(counts.indptr))
    tf = counts.data
    norm = k1 * (1.0 - b + b * lengths[rows] / lengths.mean())
    data = idf[counts.indices] * tf * (k1 + 1.0) / (tf + norm)
    return sparse.csr_matrix((data, counts.indices, counts.indptr), shape=counts.shape)
