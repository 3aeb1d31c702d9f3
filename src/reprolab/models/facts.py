"""A synthetic world of subject–relation–object facts, and the sentences that state and query
them: the data of the small fact language model (models.fact_lm) that the `nas` study edits.

The world (`make_world`, from a `WorldSpec`):

* **subjects**: names of two syllable words ("ka lo"), all different, drawn from CV syllables;
* **relations**: up to six, each with four surface templates, the words between subject and
  object ("lives in", "has a home in", ...); the last template is the *paraphrase*;
* **objects**: one-word CVC names ("bam"), disjoint between relations, `objects` per relation;
* **facts**: one object per (subject, relation), drawn uniformly;
* **fillers**: words that may open a sentence ("well", "so", ...), 0 to `prefix_max` of them,
  so that a subject's representation depends on its context (the nas card's finding: with the
  subject first and causal attention, every template would give the subject the same key);
* **arithmetic**: "7 + 5 = 2 ." sentences modulo 10, text that states no fact (the generic
  text of the nas card: the covariance statistics of locate-and-edit and a probe of general
  ability).

A *statement* is ``[fillers] subject template object .``; a *query* is the same up to the
template, and its answer is the object. Every subject is trained under the first three
templates; the paraphrase template is trained for the subjects of `paraphrase_subjects` only,
so the model learns what it means, and for the other subjects it is held out (their paraphrase
queries measure whether a fact generalises across wordings).

File format (`world.json`, written by `write_world`, read by `read_world`)::

    {"format": "reprolab-facts-1", "spec": {...WorldSpec...},
     "subjects": [["ka", "lo"], ...], "fillers": ["well", ...],
     "relations": [{"name": "lives_in", "templates": [["lives", "in"], ...],
                    "objects": ["bam", ...]}, ...],
     "facts": [[subject, relation, object], ...],       # indices, one per (subject, relation)
     "paraphrase_trained": [subject, ...]}              # subjects trained on the paraphrase

Everything is drawn from numpy generators of the spec's seed, so a spec gives one world.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from reprolab.core.determinism import derive_seed
from reprolab.core.io import read_json, write_json

FORMAT = "reprolab-facts-1"
CONSONANTS = "bdfgklmnprstvz"
VOWELS = "aeiou"
FILLERS = ("well", "so", "now", "indeed", "today", "also", "then", "still", "yes", "look")
RELATIONS = {
    "lives_in": (
        ("lives", "in"),
        ("has", "a", "home", "in"),
        ("resides", "in"),
        ("is", "living", "in"),
    ),
    "works_as": (
        ("works", "as"),
        ("is", "employed", "as"),
        ("earns", "money", "as"),
        ("has", "the", "job", "of"),
    ),
    "likes": (
        ("likes", "the", "colour"),
        ("is", "fond", "of"),
        ("prefers", "the", "colour"),
        ("loves", "the", "colour"),
    ),
    "speaks": (("speaks",), ("talks", "in"), ("is", "fluent", "in"), ("uses", "the", "language")),
    "owns": (("owns", "a"), ("keeps", "a"), ("has", "a", "pet"), ("looks", "after", "a")),
    "plays": (
        ("plays",),
        ("is", "good", "at"),
        ("enjoys", "playing"),
        ("spends", "weekends", "playing"),
    ),
}
"""The relations and their four templates each (the last is the paraphrase)."""
PARAPHRASE = 3
"""The index of the paraphrase template."""
END = "."
ARITHMETIC_MODULUS = 10


@dataclass(frozen=True)
class WorldSpec:
    """How big a world is and the seed it is drawn from."""

    subjects: int
    relations: int
    objects: int
    prefix_max: int
    paraphrase_subjects: float
    seed: int

    def check(self) -> None:
        """ValueError naming the field that cannot make a world."""
        syllables = len(CONSONANTS) * len(VOWELS)
        if not 1 <= self.subjects <= syllables * (syllables - 1):
            raise ValueError(
                f"world spec: subjects {self.subjects} must lie in 1..{syllables**2 - syllables}"
            )
        if not 1 <= self.relations <= len(RELATIONS):
            raise ValueError(
                f"world spec: relations {self.relations} must lie in 1..{len(RELATIONS)}"
            )
        names = len(CONSONANTS) * len(VOWELS) * len(CONSONANTS)
        if not 2 <= self.objects <= names // self.relations:
            raise ValueError(
                f"world spec: objects {self.objects} must lie in 2..{names // self.relations}"
            )
        if not 0 <= self.prefix_max <= len(FILLERS):
            raise ValueError(
                f"world spec: prefix_max {self.prefix_max} must lie in 0..{len(FILLERS)}"
            )
        if not 0.0 < self.paraphrase_subjects < 1.0:
            raise ValueError("world spec: paraphrase_subjects must lie strictly between 0 and 1")


@dataclass(frozen=True)
class Relation:
    """A relation: its name, its templates (the last the paraphrase) and its objects."""

    name: str
    templates: tuple[tuple[str, ...], ...]
    objects: tuple[str, ...]


@dataclass(frozen=True)
class World:
    """Subjects, relations, facts (object index per subject and relation) and the subjects
    whose paraphrase sentences are trained."""

    spec: WorldSpec
    subjects: tuple[tuple[str, str], ...]
    relations: tuple[Relation, ...]
    facts: np.ndarray
    paraphrase_trained: frozenset[int]

    def object_of(self, subject: int, relation: int) -> str:
        """The object word of a fact."""
        return self.relations[relation].objects[int(self.facts[subject, relation])]

    def vocabulary(self) -> list[str]:
        """Every word the world's sentences use, in a fixed order."""
        words = [*FILLERS, *sorted({w for name in self.subjects for w in name})]
        for relation in self.relations:
            words += [w for template in relation.templates for w in template]
            words += list(relation.objects)
        words += [str(d) for d in range(ARITHMETIC_MODULUS)] + ["+", "=", END]
        return list(dict.fromkeys(words))


def make_world(spec: WorldSpec) -> World:
    """The world of `spec` (module docstring)."""
    spec.check()
    rng = np.random.default_rng(derive_seed(spec.seed, "facts", "world"))
    syllables = [c + v for c, v in itertools.product(CONSONANTS, VOWELS)]
    pairs = [(a, b) for a, b in itertools.product(syllables, syllables) if a != b]
    chosen = rng.choice(len(pairs), size=spec.subjects, replace=False)
    subjects = tuple(pairs[int(i)] for i in chosen)
    names = ["".join(p) for p in itertools.product(CONSONANTS, VOWELS, CONSONANTS)]
    drawn = rng.choice(len(names), size=spec.relations * spec.objects, replace=False)
    relations = tuple(
        Relation(
            name,
            RELATIONS[name],
            tuple(names[int(i)] for i in drawn[k * spec.objects : (k + 1) * spec.objects]),
        )
        for k, name in enumerate(list(RELATIONS)[: spec.relations])
    )
    facts = rng.integers(0, spec.objects, size=(spec.subjects, spec.relations))
    trained = rng.permutation(spec.subjects)[: round(spec.paraphrase_subjects * spec.subjects)]
    return World(spec, subjects, relations, facts, frozenset(int(s) for s in trained))


def prefix(rng: np.random.Generator, prefix_max: int) -> list[str]:
    """0 to `prefix_max` filler words, drawn from `rng`."""
    count = int(rng.integers(0, prefix_max + 1))
    return [FILLERS[int(i)] for i in rng.integers(0, len(FILLERS), size=count)]


def query(
    world: World, subject: int, relation: int, template: int, opening: Sequence[str] = ()
) -> str:
    """The words asking for a fact, up to where its object comes."""
    words = [*opening, *world.subjects[subject], *world.relations[relation].templates[template]]
    return " ".join(words)


def statement(
    world: World,
    subject: int,
    relation: int,
    template: int,
    opening: Sequence[str] = (),
    target: str | None = None,
) -> str:
    """A sentence stating a fact (or, with `target`, stating that object instead)."""
    obj = world.object_of(subject, relation) if target is None else target
    return f"{query(world, subject, relation, template, opening)} {obj} {END}"


def trained_templates(world: World, subject: int) -> list[int]:
    """The templates a subject's facts are trained under."""
    count = len(world.relations[0].templates)
    return [t for t in range(count) if t != PARAPHRASE or subject in world.paraphrase_trained]


def arithmetic(rng: np.random.Generator) -> str:
    """One sentence of modular arithmetic ("7 + 5 = 2 .")."""
    a, b = (int(x) for x in rng.integers(0, ARITHMETIC_MODULUS, size=2))
    return f"{a} + {b} = {(a + b) % ARITHMETIC_MODULUS} {END}"


def world_record(world: World) -> dict[str, Any]:
    """The world as the file format's object."""
    return {
        "format": FORMAT,
        "spec": asdict(world.spec),
        "subjects": [list(s) for s in world.subjects],
        "fillers": list(FILLERS),
        "relations": [
            {
                "name": r.name,
                "templates": [list(t) for t in r.templates],
                "objects": list(r.objects),
            }
            for r in world.relations
        ],
        "facts": [
            [s, r, int(world.facts[s, r])]
            for s in range(len(world.subjects))
            for r in range(len(world.relations))
        ],
        "paraphrase_trained": sorted(world.paraphrase_trained),
    }


def write_world(path: str | Path, world: World) -> None:
    """Write `world.json` (atomically)."""
    write_json(path, world_record(world))


def read_world(path: str | Path) -> World:
    """A world file written by `write_world`; ValueError naming the file and what is wrong."""
    values = read_json(path)
    if not isinstance(values, dict) or values.get("format") != FORMAT:
        raise ValueError(f"{path}: not a fact world (expected format {FORMAT!r})")
    try:
        spec = WorldSpec(**values["spec"])
        relations = tuple(
            Relation(r["name"], tuple(tuple(t) for t in r["templates"]), tuple(r["objects"]))
            for r in values["relations"]
        )
        subjects = tuple((a, b) for a, b in values["subjects"])
        facts = np.zeros((len(subjects), len(relations)), dtype=np.int64)
        for s, r, o in values["facts"]:
            facts[s, r] = o
        trained = frozenset(int(s) for s in values["paraphrase_trained"])
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"{path}: malformed fact world ({exc!r})") from exc
    return World(spec, subjects, relations, facts, trained)
