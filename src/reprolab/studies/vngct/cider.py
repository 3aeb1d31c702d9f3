"""CIDEr-D of generated captions, as the COCO caption evaluation computes it.

`cider_d` scores each candidate against its references, with statistics of the evaluated set:

* texts are tokenised (`tokenize`) and cut into 1- to 4-grams;
* each n-gram is weighted by TF-IDF: its count in the text times ``log(N) − log(max(1, df))``,
  where N is the number of items evaluated and df the number of items whose references hold
  the n-gram (document frequencies come from the references only, never the candidates);
* per n, the cosine of the candidate's and a reference's vectors, with the candidate's weights
  clipped at the reference's (``min(c, r)·r``), times a Gaussian length penalty
  ``exp(−δ² / (2σ²))``, σ = 6, where δ is the difference of the two texts' lengths;
* the mean over n = 1..4, averaged over the item's references, times 10.

The set's CIDEr-D is the mean of the items' scores. Choices: the length is the count of
bigrams, as the reference implementation counts it (words − 1); `tokenize` stands in for the
Stanford PTB tokenizer the COCO toolkit calls (a Java program): lowercase, punctuation removed,
split on whitespace, which gives the same tokens for plain captions.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

import numpy as np

MAX_N = 4
SIGMA = 6.0
SCALE = 10.0
_NOT_WORD = re.compile(r"[^\w\s]")

Ngrams = Counter[tuple[str, ...]]


def tokenize(text: str) -> list[str]:
    """Lowercase words of `text` with punctuation removed (see the module docstring)."""
    return _NOT_WORD.sub(" ", text.lower()).split()


def ngram_counts(text: str) -> Ngrams:
    """Counts of every 1- to 4-gram of the tokenised `text`."""
    words = tokenize(text)
    return Counter(
        tuple(words[i : i + n]) for n in range(1, MAX_N + 1) for i in range(len(words) - n + 1)
    )


class _Vector:
    """TF-IDF weights of one text per n-gram order, their norms and the text's length."""

    def __init__(self, counts: Ngrams, idf: dict[tuple[str, ...], float], log_items: float):
        self.weights: list[dict[tuple[str, ...], float]] = [{} for _ in range(MAX_N)]
        for ngram, count in counts.items():
            self.weights[len(ngram) - 1][ngram] = count * idf.get(ngram, log_items)
        self.norms = [math.sqrt(sum(w * w for w in order.values())) for order in self.weights]
        self.length = sum(counts[g] for g in self.weights[1])

    def similarity(self, reference: _Vector) -> float:
        """Mean over n of the clipped cosine with `reference`, times the length penalty."""
        delta = self.length - reference.length
        penalty = math.exp(-(delta**2) / (2 * SIGMA**2))
        total = 0.0
        for mine, theirs, norm, norm_ref in zip(
            self.weights, reference.weights, self.norms, reference.norms, strict=True
        ):
            value = sum(min(w, theirs.get(g, 0.0)) * theirs.get(g, 0.0) for g, w in mine.items())
            if norm and norm_ref:
                value /= norm * norm_ref
            total += value * penalty
        return total / MAX_N


def cider_d(candidates: Sequence[str], references: Sequence[Sequence[str]]) -> np.ndarray:
    """Per item, the CIDEr-D of its candidate against its references (module docstring);
    document frequencies come from the references of all the items given. ValueError when the
    counts differ or an item has no reference."""
    if len(candidates) != len(references):
        raise ValueError(f"{len(candidates)} candidates for {len(references)} reference sets")
    for number, refs in enumerate(references):
        if not refs:
            raise ValueError(f"item {number} has no reference caption; CIDEr needs at least one")
    reference_counts = [[ngram_counts(ref) for ref in refs] for refs in references]
    frequency: Counter[tuple[str, ...]] = Counter()
    for counts in reference_counts:
        frequency.update(set().union(*counts))
    log_items = math.log(len(candidates)) if candidates else 0.0
    idf = {ngram: log_items - math.log(df) for ngram, df in frequency.items()}
    scores = []
    for candidate, counts in zip(candidates, reference_counts, strict=True):
        vector = _Vector(ngram_counts(candidate), idf, log_items)
        similarities = [vector.similarity(_Vector(c, idf, log_items)) for c in counts]
        scores.append(SCALE * sum(similarities) / len(similarities))
    return np.asarray(scores, dtype=float)
