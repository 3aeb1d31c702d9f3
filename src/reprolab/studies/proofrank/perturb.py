"""Controlled perturbations of a correct human proof, each meant to move one proxy's axis and
keep the proof correct (the discriminant-validity table's rows).

* `padding`: filler sentences (no expression, no structure marker, no lexicon concept) between
  the lines, as many tokens again as the proof has: conciseness should fall, nothing else.
* `computational_detour`: two unneeded but true calculation lines (products of two-digit
  numbers): computational ease should fall.
* `cognitive_detour`: an unneeded assumption and case split around the argument and an
  auxiliary object that is never used: cognitive simplicity should fall.

Both detours are worded tersely (about ten tokens in all), since any added word also lowers
conciseness; whether each proxy still moves most under its own perturbation is what the
discriminant-validity claim measures on the corpus.
* `duplication`: the proof kept, and every other proof of the theorem's set replaced by a copy
  of it (as a backend that always writes the same proof): diversity should fall, and the proof
  itself, so every per-proof proxy, is unchanged. It is the one perturbation of the whole set
  (`WHOLE_SET`); the others change one proof of it.
* `technique_swap`: the proof replaced by a correct proof of the same theorem that uses another
  technique, while the technique asked for stays the original's: adaptivity should fall.
* `identity`: the proof unchanged (the control: every proxy's change must be zero).

Every choice (which filler, which numbers, which other proof) is drawn from a numpy generator of
the seed, so a (proof, perturbation, seed) always gives the same text. A perturbation that needs
another proof of the theorem returns None when there is none.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from reprolab.studies.proofrank.corpus import Proof, Theorem
from reprolab.studies.proofrank.text import lines, words

FILLERS = (
    "It is worth pausing to note what was just shown.",
    "We now continue with the argument from this point.",
    "This observation will be useful in what follows.",
    "Nothing more is needed at this stage of the reasoning.",
    "The next step follows the same line of thought.",
    "We record this fact before moving on.",
    "This is the key point of the argument so far.",
    "With this in hand the rest is straightforward.",
)
"""Sentences that add length and nothing else: no `$`, no line-start marker, no concept word."""
EXPECTED = {
    "padding": "conciseness",
    "computational_detour": "computational_ease",
    "cognitive_detour": "cognitive_simplicity",
    "duplication": "diversity",
    "technique_swap": "adaptivity",
    "identity": None,
}
"""The proxy each perturbation should lower (None: the control, which should move nothing)."""
WHOLE_SET = frozenset({"duplication"})
"""Perturbations whose text replaces every proof of the theorem's set, not only its own."""


def _interleave(body: list[str], extra: list[str], rng: np.random.Generator) -> str:
    """`body`'s lines with `extra` inserted at random places (never after the last line)."""
    out = list(body)
    for line in extra:
        out.insert(int(rng.integers(0, len(out))), line)
    return "\n".join(out)


def padding(proof: Proof, theorem: Theorem, rng: np.random.Generator) -> str:
    """Filler lines until the proof is twice as long (in tokens)."""
    body = lines(proof.text)
    target = len(words(proof.text))
    extra: list[str] = []
    while sum(len(line.split()) for line in extra) < target:
        extra.append(FILLERS[int(rng.integers(len(FILLERS)))])
    return _interleave(body, extra, rng)


def computational_detour(proof: Proof, theorem: Theorem, rng: np.random.Generator) -> str:
    """Two true, unneeded products of two-digit numbers as calculation lines."""
    extra = []
    for start in ("Then", "So"):
        a, b = (int(v) for v in rng.integers(11, 100, size=2))
        extra.append(f"{start} ${a}*{b} = {a * b}$.")
    return _interleave(lines(proof.text), extra, rng)


def cognitive_detour(proof: Proof, theorem: Theorem, rng: np.random.Generator) -> str:
    """An unneeded assumption, a two-case split whose cases run the same argument, and an
    auxiliary object never used again."""
    body = lines(proof.text)
    name = "tuvw"[int(rng.integers(4))]
    return "\n".join(
        [
            "Assume two situations.",
            f"Let {name} be spare.",
            "Case 1: the first.",
            *body[:-1],
            "Case 2: the same again.",
            body[-1],
        ]
    )


def duplication(proof: Proof, theorem: Theorem, rng: np.random.Generator) -> str:
    """The proof itself (the set around it becomes its copies: WHOLE_SET)."""
    return proof.text


def technique_swap(proof: Proof, theorem: Theorem, rng: np.random.Generator) -> str | None:
    """Another correct proof of the theorem that uses a different technique, drawn at random
    (None when there is none)."""
    found = [p for p in theorem.proofs if p.correct and p.technique != proof.technique]
    return found[int(rng.integers(len(found)))].text if found else None


def identity(proof: Proof, theorem: Theorem, rng: np.random.Generator) -> str:
    """The proof as it is."""
    return proof.text


PERTURBATIONS: dict[str, Callable[[Proof, Theorem, np.random.Generator], str | None]] = {
    "padding": padding,
    "computational_detour": computational_detour,
    "cognitive_detour": cognitive_detour,
    "duplication": duplication,
    "technique_swap": technique_swap,
    "identity": identity,
}
"""The perturbations, in table order."""


def perturb(name: str, proof: Proof, theorem: Theorem, seed: int) -> str | None:
    """The perturbed text of `proof` under perturbation `name` from `seed`."""
    if name not in PERTURBATIONS:
        raise ValueError(f"unknown perturbation {name!r}; expected one of {list(PERTURBATIONS)}")
    return PERTURBATIONS[name](proof, theorem, np.random.default_rng(seed))
