"""The proof generators the harness scores, behind one interface:
`generate(theorem, instruction, n, seed) -> list[str]`, where `instruction` is None (prove it
any way) or a technique of corpus.TECHNIQUES (prove it by that technique).

Retrieval backends answer from the corpus's own proofs of the theorem, so what they return is
known exactly and the harness's measures can be checked against it:

* `RetrievalBackend("best")`: the proof the ProofRank score ranks first (given as a scorer),
  in the technique asked for where there is one;
* `RetrievalBackend("random")`: a proof drawn at random (incorrect ones included), in the
  technique asked for where there is one;
* `NoncompliantBackend(rate)`: like random, but with probability `rate` a proof of another
  technique than the one asked for (the non-compliance the adaptivity proxy must recover). Its
  coin has a generator of its own and its draws are random retrieval's, so where it complies it
  returns what random retrieval returns: random retrieval is its compliant twin;
* `VerboseBackend(inner)`: another backend's proofs with padding added (perturb.padding).

Every draw comes from a numpy generator of (seed, theorem, instruction), so the same call gives
the same proofs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

import numpy as np

from reprolab.core.determinism import derive_seed
from reprolab.studies.proofrank.corpus import Proof, Theorem
from reprolab.studies.proofrank.perturb import padding


class Backend(Protocol):
    """What the harness calls."""

    def generate(
        self, theorem: Theorem, instruction: str | None, n: int, seed: int
    ) -> list[str]: ...


def _rng(seed: int, theorem: Theorem, instruction: str | None) -> np.random.Generator:
    return np.random.default_rng(derive_seed(seed, "proofrank", theorem.theorem_id, instruction))


def _asked(theorem: Theorem, instruction: str | None) -> list[Proof]:
    """The theorem's proofs in the technique asked for; all of them when none is asked for or
    the corpus has none in it."""
    matching = [p for p in theorem.proofs if instruction in (None, p.technique)]
    return matching or list(theorem.proofs)


def _pick(pool: list[Proof], draw: float) -> Proof:
    """The proof a uniform draw in [0, 1) picks from `pool`."""
    return pool[int(draw * len(pool))]


class RetrievalBackend:
    """The corpus's proofs: the best one by `score`, or one drawn at random."""

    def __init__(self, mode: str, score: Callable[[Proof, Theorem], float] | None = None):
        if mode not in ("best", "random"):
            raise ValueError(f"retrieval mode {mode!r}: expected 'best' or 'random'")
        if mode == "best" and score is None:
            raise ValueError("the best-retrieval backend needs a score")
        self.mode, self.score = mode, score

    def generate(self, theorem: Theorem, instruction: str | None, n: int, seed: int) -> list[str]:
        pool = _asked(theorem, instruction)
        if self.mode == "best":
            best = max(pool, key=lambda p: (self.score(p, theorem), p.proof_id))
            return [best.text] * n
        rng = _rng(seed, theorem, instruction)
        return [_pick(pool, rng.random()).text for _ in range(n)]


class NoncompliantBackend:
    """A random proof in the technique asked for, except with probability `rate` one in
    another technique (when the theorem has one)."""

    def __init__(self, rate: float):
        if not 0.0 <= rate <= 1.0:
            raise ValueError(f"non-compliance rate {rate}: must lie in [0, 1]")
        self.rate = rate

    def generate(self, theorem: Theorem, instruction: str | None, n: int, seed: int) -> list[str]:
        rng = _rng(seed, theorem, instruction)
        coins = _rng(seed, theorem, f"comply {instruction}")
        asked = _asked(theorem, instruction)
        others = [p for p in theorem.proofs if instruction and p.technique != instruction]
        out = []
        for _ in range(n):
            draw, strays = rng.random(), coins.random() < self.rate
            out.append(_pick(others if others and strays else asked, draw).text)
        return out


class VerboseBackend:
    """Another backend's proofs, each padded to twice its length."""

    def __init__(self, inner: Backend):
        self.inner = inner

    def generate(self, theorem: Theorem, instruction: str | None, n: int, seed: int) -> list[str]:
        rng = _rng(seed, theorem, f"verbose {instruction}")
        texts = self.inner.generate(theorem, instruction, n, seed)
        return [padding(_as_proof(text), theorem, rng) for text in texts]


def _as_proof(text: str) -> Proof:
    """A bare Proof around a generated text (what the perturbations take)."""
    return Proof("generated", "direct", True, "backend", text)


def techniques_of(theorem: Theorem) -> Sequence[str]:
    """The techniques the theorem's correct proofs use (what a backend may be asked for)."""
    return sorted({p.technique for p in theorem.proofs if p.correct})
