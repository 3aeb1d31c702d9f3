"""The paper-scale theorem files: NaturalProofs' JSON (`naturalproofs_proofwiki.json` and its
Stacks twin), read into the study's Theorems.

The file holds `{"dataset": {"theorems": [...], ...}, "splits": {...}}`; a theorem is
`{"id", "label", "categories", "contents": [lines], "proofs": [{"contents": [lines]}, ...]}`.
A theorem becomes `np-<id>` with the joined lines of its contents as the statement and each
proof with non-empty contents as a correct proof (ProofWiki's proofs are curated) by author
"ProofWiki". NaturalProofs carries no technique labels, so `label` (the technique classifier
trained on the project's labelled corpus) gives each proof its technique: adaptivity and
diversity at paper scale measure against those predicted labels, which the study's docs say.

With `split` only the theorems of that split's examples (`splits.<split>.examples`, pairs of
theorem id and proof index) are kept, and with `limit` the first `limit` of them. An entry
that is not a theorem of that form is a Problem naming the file and the entry's index; the
rest is read.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from reprolab.studies.proofrank.corpus import Problem, Proof, Theorem

Labeller = Callable[[Sequence[str]], list[str]]


def _lines(value: Any, what: str) -> str:
    """A list of text lines joined; ValueError naming `what` otherwise."""
    if not isinstance(value, list) or not all(isinstance(line, str) for line in value):
        raise ValueError(f"{what} must be a list of text lines")
    return "\n".join(value).strip()


def _theorem(entry: Any, label: Labeller) -> Theorem | None:
    """One NaturalProofs theorem (None when it has no proof with text); ValueError naming what
    is wrong."""
    if not isinstance(entry, dict) or "id" not in entry:
        raise ValueError("a theorem must be an object with an id")
    statement = _lines(entry.get("contents"), "contents")
    if not statement:
        raise ValueError("contents are empty")
    proofs = entry.get("proofs")
    if not isinstance(proofs, list):
        raise ValueError("proofs must be a list")
    texts = [
        _lines(p.get("contents") if isinstance(p, dict) else None, "a proof's contents")
        for p in proofs
    ]
    texts = [t for t in texts if t]
    if not texts:
        return None
    categories = entry.get("categories") or ["proofwiki"]
    theorem_id = f"np-{entry['id']}"
    return Theorem(
        theorem_id=theorem_id,
        topic=str(categories[0]),
        statement=statement,
        proofs=tuple(
            Proof(f"{theorem_id}-{k}", technique, True, "ProofWiki", text)
            for k, (text, technique) in enumerate(zip(texts, label(texts), strict=True))
        ),
    )


def read_naturalproofs(
    path: str | Path, label: Labeller, split: str | None = None, limit: int | None = None
) -> tuple[list[Theorem], list[Problem]]:
    """The theorems of a NaturalProofs file (module docstring) and the entries that failed."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        entries = data["dataset"]["theorems"]
    except (json.JSONDecodeError, KeyError, TypeError) as exc:
        raise ValueError(
            f"{path}: not a NaturalProofs file (expected JSON with dataset.theorems): {exc}"
        ) from exc
    keep = None
    if split is not None:
        try:
            keep = {int(pair[0]) for pair in data["splits"][split]["examples"]}
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{path}: no split {split!r} with examples: {exc}") from exc
    theorems: list[Theorem] = []
    problems: list[Problem] = []
    for index, entry in enumerate(entries):
        if keep is not None and isinstance(entry, dict) and entry.get("id") not in keep:
            continue
        if limit is not None and len(theorems) >= limit:
            break
        item = f"np-{entry['id']}" if isinstance(entry, dict) and "id" in entry else None
        try:
            theorem = _theorem(entry, label)
        except ValueError as exc:
            problems.append(Problem(str(path), index, item, str(exc)))
            continue
        if theorem is not None:
            theorems.append(theorem)
    return theorems, problems
