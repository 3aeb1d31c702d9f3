"""The five proof-quality proxies, each a number in [0, 1] where higher is better, all gated by
correctness (an incorrect proof scores 0 on every per-proof proxy).

The abstract names the axes, not their definitions; these are the design card's, with its
choices stated where they are made:

* `conciseness`: the shortest correct reference proof's length over the candidate's, capped at
  1 (lengths in whitespace tokens, text.words).
* `computational_ease`: 1 / (1 + cost / scale), cost = text.computation_cost (operations of the
  parsed expressions, calculation lines, log10 of the largest integer).
* `cognitive_simplicity`: 1 / (1 + cost / scale), cost = text.cognitive_cost (nesting depth,
  cases, auxiliary objects, distinct concepts, weights 1).
* `diversity` of a set of proofs of one theorem: ½ (1 − the mean pairwise cosine similarity of
  their embeddings) + ½ (the entropy of their techniques over log of the number of techniques).
* `adaptivity` of a set of proofs asked for a technique: the share the technique classifier
  (studies.proofrank.technique) labels with the technique asked for.

The scales of the two cost proxies are the median cost of the corpus's correct human proofs
(`Scales.of`), so a typical human proof scores 0.5: computed from the data, never tuned.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from reprolab.studies.proofrank.corpus import TECHNIQUES
from reprolab.studies.proofrank.text import cognitive_cost, computation_cost, words


@dataclass(frozen=True)
class Scales:
    """The normalising scales of the two cost proxies."""

    computation: float
    cognition: float

    @classmethod
    def of(cls, texts: Sequence[str]) -> Scales:
        """The median costs of `texts` (the correct human proofs); 1 where a median is 0."""
        if not texts:
            raise ValueError("proofrank: no proofs to set the proxies' scales from")
        computation = float(np.median([computation_cost(t) for t in texts])) or 1.0
        cognition = float(np.median([cognitive_cost(t) for t in texts])) or 1.0
        return cls(computation, cognition)


def conciseness(text: str, references: Sequence[str], correct: bool) -> float:
    """min(1, shortest reference length / candidate length); 0 for an incorrect proof."""
    if not correct:
        return 0.0
    if not references:
        raise ValueError("conciseness needs at least one reference proof")
    shortest = min(len(words(r)) for r in references)
    return min(1.0, shortest / max(1, len(words(text))))


def computational_ease(text: str, scales: Scales, correct: bool) -> float:
    """1 / (1 + computation cost / scale); 0 for an incorrect proof."""
    return 1.0 / (1.0 + computation_cost(text) / scales.computation) if correct else 0.0


def cognitive_simplicity(text: str, scales: Scales, correct: bool) -> float:
    """1 / (1 + cognitive cost / scale); 0 for an incorrect proof."""
    return 1.0 / (1.0 + cognitive_cost(text) / scales.cognition) if correct else 0.0


def technique_entropy(techniques: Sequence[str]) -> float:
    """The entropy of the techniques' frequencies over log(number of techniques), in [0, 1]."""
    counts = np.array(list(Counter(techniques).values()), dtype=float)
    shares = counts / counts.sum()
    return float(-(shares * np.log(shares)).sum() / math.log(len(TECHNIQUES)))


def diversity(embeddings: np.ndarray, techniques: Sequence[str]) -> float:
    """½ (1 − mean pairwise cosine of the rows of `embeddings`) + ½ technique_entropy, over
    the correct proofs of one theorem (0 for fewer than two)."""
    if len(embeddings) < 2:
        return 0.0
    unit = embeddings / np.maximum(np.linalg.norm(embeddings, axis=1, keepdims=True), 1e-12)
    cosine = unit @ unit.T
    pairs = cosine[np.triu_indices(len(unit), 1)]
    spread = max(0.0, 1.0 - float(pairs.mean()))  # rounding puts equal rows' cosine above 1
    return 0.5 * spread + 0.5 * technique_entropy(techniques)


def adaptivity(predicted: Sequence[str], requested: str) -> float:
    """The share of proofs whose predicted technique is the one requested."""
    if not predicted:
        raise ValueError("adaptivity needs at least one proof")
    return sum(p == requested for p in predicted) / len(predicted)
