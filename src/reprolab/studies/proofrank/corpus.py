"""proofrank's corpus: theorems with several human proofs each, in one JSONL format.

Each line is one theorem:

    {"theorem_id": "nt-01", "topic": "number theory", "statement": "...",
     "proofs": [{"proof_id": "nt-01-a", "technique": "parity", "correct": true,
                 "author": "reprolab", "text": "...", "flaw": "..."}, ...]}

`flaw` is present only on an incorrect proof and says what is wrong with it. The corpus that
ships with the project (`corpus/*.jsonl`, written for it and released under the project's
licence) is package data beside this module, so the installed package finds it.

Reading never stops at a bad line: a line that is not JSON, lacks a key or carries a value of
the wrong kind is recorded as a `Problem` naming the file, the line and the id where there is
one, and the rest of the file is read (`read_corpus` returns the theorems and the problems). A
proof with an expression outside the dialect is read and reported the same way.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from reprolab.studies.proofrank.text import unparsed

TECHNIQUES = ("induction", "contradiction", "direct", "pigeonhole", "counting", "parity")
"""The proof techniques a proof is labelled with (and a backend may be asked for)."""
THEOREM_KEYS = {"theorem_id", "topic", "statement", "proofs"}
PROOF_KEYS = {"proof_id", "technique", "correct", "author", "text"}
UNPARSABLE = "kept, with expression(s) sympy cannot parse, each counted as one operation"


@dataclass(frozen=True)
class Proof:
    """One proof of a theorem, with its technique and correctness labels."""

    proof_id: str
    technique: str
    correct: bool
    author: str
    text: str
    flaw: str | None = None


@dataclass(frozen=True)
class Theorem:
    """A theorem and its proofs."""

    theorem_id: str
    topic: str
    statement: str
    proofs: tuple[Proof, ...]


@dataclass(frozen=True)
class Problem:
    """A corpus line that could not be read, and why."""

    path: str
    line: int
    item: str | None
    message: str

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" + (f" ({self.item})" if self.item else "")
        return f"{where}: {self.message}"


def _proof(values: Any) -> Proof:
    """A proof from its JSON object; ValueError naming the key at fault."""
    if not isinstance(values, dict):
        raise ValueError(f"a proof must be an object, got {type(values).__name__}")
    missing = sorted(PROOF_KEYS - set(values))
    extra = sorted(set(values) - PROOF_KEYS - {"flaw"})
    if missing or extra:
        raise ValueError(f"proof {values.get('proof_id')!r}: missing {missing}, unknown {extra}")
    if values["technique"] not in TECHNIQUES:
        raise ValueError(
            f"proof {values['proof_id']!r}: technique {values['technique']!r} is not one of "
            f"{list(TECHNIQUES)}"
        )
    if not isinstance(values["correct"], bool):
        raise ValueError(f"proof {values['proof_id']!r}: correct must be true or false")
    if not isinstance(values["text"], str) or not values["text"].strip():
        raise ValueError(f"proof {values['proof_id']!r}: text must be a non-empty string")
    if ("flaw" in values) == values["correct"]:
        raise ValueError(f"proof {values['proof_id']!r}: a `flaw` goes with correct: false only")
    return Proof(
        proof_id=str(values["proof_id"]),
        technique=values["technique"],
        correct=values["correct"],
        author=str(values["author"]),
        text=values["text"],
        flaw=values.get("flaw"),
    )


def parse_theorem(line: str) -> Theorem:
    """One corpus line as a Theorem; ValueError saying what is wrong."""
    try:
        values = json.loads(line)
    except json.JSONDecodeError as exc:
        raise ValueError(f"not valid JSON ({exc.msg} at column {exc.colno})") from exc
    if not isinstance(values, dict):
        raise ValueError(f"a line must hold one object, got {type(values).__name__}")
    missing = sorted(THEOREM_KEYS - set(values))
    extra = sorted(set(values) - THEOREM_KEYS)
    if missing or extra:
        raise ValueError(f"missing key(s) {missing}, unknown key(s) {extra}")
    if not isinstance(values["proofs"], list) or not values["proofs"]:
        raise ValueError("proofs must be a non-empty list")
    return Theorem(
        theorem_id=str(values["theorem_id"]),
        topic=str(values["topic"]),
        statement=str(values["statement"]),
        proofs=tuple(_proof(p) for p in values["proofs"]),
    )


def _item(line: str) -> str | None:
    """The theorem id of a line, when the line is JSON enough to tell."""
    try:
        values = json.loads(line)
    except json.JSONDecodeError:
        return None
    return str(values.get("theorem_id")) if isinstance(values, dict) else None


def read_lines(path: str, lines: Iterable[str]) -> tuple[list[Theorem], list[Problem]]:
    """The theorems of a JSONL text (`path` names it in problems) and the lines that failed;
    duplicate theorem or proof ids are problems too (the first one is kept). A proof with an
    expression sympy cannot parse is kept (the expression counts as one operation) and
    reported as a problem too."""
    theorems: list[Theorem] = []
    problems: list[Problem] = []
    seen: set[str] = set()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            theorem = parse_theorem(line)
        except ValueError as exc:
            problems.append(Problem(path, number, _item(line), str(exc)))
            continue
        ids = [theorem.theorem_id, *(p.proof_id for p in theorem.proofs)]
        repeated = sorted(i for i in ids if i in seen) + sorted(
            {i for i in ids if ids.count(i) > 1}
        )
        if repeated:
            problems.append(
                Problem(path, number, theorem.theorem_id, f"ids seen twice: {repeated}")
            )
            continue
        seen.update(ids)
        theorems.append(theorem)
        problems += [
            Problem(path, number, proof.proof_id, f"{UNPARSABLE}: {found}")
            for proof in theorem.proofs
            if (found := unparsed(proof.text))
        ]
    return theorems, problems


def read_corpus(paths: Iterable[str | Path]) -> tuple[list[Theorem], list[Problem]]:
    """Every theorem of the JSONL files `paths`, in file and line order, and the problems."""
    theorems: list[Theorem] = []
    problems: list[Problem] = []
    for path in paths:
        found, bad = read_lines(str(path), Path(path).read_text(encoding="utf-8").splitlines())
        theorems += found
        problems += bad
    return theorems, problems


BUNDLED = Path(__file__).parent / "corpus"
"""The folder of the corpus that ships with the package (package data)."""


def bundled_files() -> list[Path]:
    """The corpus files that ship with the package, sorted by name."""
    return sorted(BUNDLED.glob("*.jsonl"))


def theorem_record(theorem: Theorem) -> dict[str, Any]:
    """A theorem as its corpus line's object (what `parse_theorem` reads back)."""
    proofs = []
    for p in theorem.proofs:
        proof = {
            "proof_id": p.proof_id,
            "technique": p.technique,
            "correct": p.correct,
            "author": p.author,
            "text": p.text,
        }
        proofs.append(proof if p.flaw is None else {**proof, "flaw": p.flaw})
    return {
        "theorem_id": theorem.theorem_id,
        "topic": theorem.topic,
        "statement": theorem.statement,
        "proofs": proofs,
    }


def corpus_text(theorems: Iterable[Theorem]) -> str:
    """The theorems as a JSONL corpus (one line each, keys in a fixed order)."""
    return "".join(json.dumps(theorem_record(t), ensure_ascii=False) + "\n" for t in theorems)
