"""Correctness κ of a generated proof at smoke scale: a judge that knows the corpus.

No model here can check a proof, so the smoke judge accepts only what it can vouch for: a
generated text is correct when, after the padding lexicon's sentences are dropped (they state
nothing, perturb.FILLERS), its words reproduce one of the theorem's correct corpus proofs (a
`difflib` similarity of the word sequences of at least `threshold`), it is nearer to that proof
than to any of the theorem's flawed proofs, and every `$...$` expression parses. A proof the
corpus does not hold is judged incorrect even when it is right: the judge is conservative, and
it is exact on the corpus (every correct proof accepted, every flawed one rejected, a sanity
check of the study). At paper scale an LM judge (hf_backend.LMJudge) takes its place behind the
same method, `judge_batch`.
"""

from __future__ import annotations

from collections.abc import Sequence
from difflib import SequenceMatcher
from typing import Protocol

from reprolab.studies.proofrank.corpus import Theorem
from reprolab.studies.proofrank.perturb import FILLERS
from reprolab.studies.proofrank.text import lines, unparsed, words


class Judge(Protocol):
    """What the harness asks for each generated proof: is it correct?"""

    def judge_batch(self, items: Sequence[tuple[Theorem, str]]) -> list[bool]: ...


def content(text: str) -> list[str]:
    """The words of a proof without its filler lines (the padding lexicon)."""
    kept = [line for line in lines(text) if line not in FILLERS]
    return words("\n".join(kept))


def similarity(a: Sequence[str], b: Sequence[str]) -> float:
    """difflib's ratio of two word sequences (1 = equal), junk heuristic off so long proofs are
    compared word by word."""
    return SequenceMatcher(None, a, b, autojunk=False).ratio()


class ReferenceJudge:
    """κ = the text reproduces a correct corpus proof of its theorem (module docstring)."""

    def __init__(self, threshold: float):
        if not 0.0 < threshold <= 1.0:
            raise ValueError(f"judge threshold {threshold}: must lie in (0, 1]")
        self.threshold = threshold
        self._known: dict[tuple[str, str], bool] = {}

    def judge(self, theorem: Theorem, text: str) -> bool:
        """Whether `text` is a correct proof of `theorem` by the module docstring's rule."""
        key = (theorem.theorem_id, text)
        if key not in self._known:
            self._known[key] = self._decide(theorem, text)
        return self._known[key]

    def _decide(self, theorem: Theorem, text: str) -> bool:
        if unparsed(text):
            return False
        found = content(text)
        nearest = {True: 0.0, False: 0.0}
        for proof in theorem.proofs:
            nearest[proof.correct] = max(
                nearest[proof.correct], similarity(found, content(proof.text))
            )
        return nearest[True] >= self.threshold and nearest[True] > nearest[False]

    def judge_batch(self, items: Sequence[tuple[Theorem, str]]) -> list[bool]:
        """κ of each (theorem, text)."""
        return [self.judge(theorem, text) for theorem, text in items]
