"""The harness: what each backend's proofs score on correctness and the five proxies (the second
table's cells for one sampling seed).

Per theorem a backend is asked `n` proofs with no instruction (the free request) and `n`
proofs by one of the techniques the theorem's correct corpus proofs use, a different one on
each seed (the instructed request; one technique per seed rather than all of them halves what
a language model must write); the judge gives each proof its κ. Then, per backend:

* correctness: the mean κ of the free proofs;
* conciseness, computational ease, cognitive simplicity: their mean over the free proofs, each
  gated by κ (references: the theorem's correct corpus proofs);
* diversity: per theorem, the diversity of its correct free proofs (fewer than two: 0), the mean
  over theorems;
* adaptivity: per instructed request, the share of its proofs that are correct and that the
  technique classifier labels with the technique asked for, the mean over requests;
* the ProofRank score: the mean over free proofs of κ · mean(conciseness, computational ease,
  cognitive simplicity), the card's single number (= the mean of the three gated means).

The technique classifier of a theorem is the cross-fitted one (validity.crossfit), so it never
saw the theorem's own corpus proofs, which retrieval backends return.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from reprolab.studies.proofrank.backends import Backend, techniques_of
from reprolab.studies.proofrank.corpus import Proof, Theorem
from reprolab.studies.proofrank.judge import Judge
from reprolab.studies.proofrank.proxies import Scales, adaptivity, diversity
from reprolab.studies.proofrank.technique import predict
from reprolab.studies.proofrank.text import unparsed, words
from reprolab.studies.proofrank.validity import Embed, per_proof

Request = tuple[Theorem, str | None]
PER_PROOF = ("conciseness", "computational_ease", "cognitive_simplicity")
MEASURES = ("correctness", *PER_PROOF, "diversity", "adaptivity", "proofrank")
"""What the harness reports per backend, in table order (the ProofRank score last)."""


def references(theorem: Theorem) -> list[str]:
    """The texts conciseness compares against: the theorem's correct corpus proofs."""
    return [p.text for p in theorem.proofs if p.correct]


def proofrank_score(text: str, theorem: Theorem, correct: bool, scales: Scales) -> float:
    """κ · mean(conciseness, computational ease, cognitive simplicity) of one proof."""
    if not correct:
        return 0.0
    return float(np.mean(list(per_proof(text, references(theorem), scales).values())))


def corpus_score(scales: Scales) -> Callable[[Proof, Theorem], float]:
    """The ProofRank score of a corpus proof by its label (what the best-retrieval backend
    ranks by)."""
    return lambda proof, theorem: proofrank_score(proof.text, theorem, proof.correct, scales)


def requests(theorems: Sequence[Theorem], seed: int) -> tuple[list[Request], list[Request]]:
    """The free requests and the instructed ones, one of each per theorem: theorem i is asked
    for technique (seed + i) mod k of the k techniques of its correct proofs, so consecutive
    seeds ask for every technique in turn."""
    free = [(t, None) for t in theorems]
    instructed = []
    for index, theorem in enumerate(theorems):
        techniques = techniques_of(theorem)
        instructed.append((theorem, techniques[(seed + index) % len(techniques)]))
    return free, instructed


def generate(backend: Backend, asked: Sequence[Request], n: int, seed: int) -> list[list[str]]:
    """n proofs per request; one batched call where the backend batches (language models)."""
    batched = getattr(backend, "generate_batch", None)
    if batched is not None:
        return batched(list(asked), n, seed)
    return [backend.generate(theorem, instruction, n, seed) for theorem, instruction in asked]


@dataclass(frozen=True)
class Scored:
    """One theorem's free proofs as a backend wrote them, with their κ and proxies."""

    theorem_id: str
    texts: list[str]
    correct: list[bool]
    proxies: dict[str, list[float]]
    diversity: float


def score_free(
    theorem: Theorem,
    texts: list[str],
    correct: list[bool],
    scales: Scales,
    model: Any,
    embed: Embed,
) -> Scored:
    """κ-gated per-proof proxies of one theorem's free proofs and their diversity."""
    refs = references(theorem)
    proxies: dict[str, list[float]] = {name: [] for name in PER_PROOF}
    for text, ok in zip(texts, correct, strict=True):
        values = per_proof(text, refs, scales) if ok else dict.fromkeys(PER_PROOF, 0.0)
        for name in PER_PROOF:
            proxies[name].append(values[name])
    good = [text for text, ok in zip(texts, correct, strict=True) if ok]
    spread = diversity(embed(good), predict(model, good)) if len(good) > 1 else 0.0
    return Scored(theorem.theorem_id, texts, correct, proxies, spread)


def compliance(texts: list[str], correct: list[bool], asked: str, model: Any) -> float:
    """The share of an instructed request's proofs that are correct and in the asked technique."""
    labels = predict(model, texts)
    return adaptivity(
        [label if ok else "incorrect" for label, ok in zip(labels, correct, strict=True)], asked
    )


def run_backend(
    backend: Backend,
    theorems: Sequence[Theorem],
    judge: Judge,
    models: Mapping[str, Any],
    embed: Embed,
    scales: Scales,
    n: int,
    seed: int,
) -> dict[str, Any]:
    """One backend's measures (module docstring), its per-theorem values and what it wrote
    that does not parse."""
    free, instructed = requests(theorems, seed)
    written = generate(backend, [*free, *instructed], n, seed)
    verdicts = judge.judge_batch(
        [
            (theorem, text)
            for (theorem, _), texts in zip([*free, *instructed], written, strict=True)
            for text in texts
        ]
    )
    correct = [verdicts[i * n : (i + 1) * n] for i in range(len(written))]
    scored = [
        score_free(theorem, written[i], correct[i], scales, models[theorem.theorem_id], embed)
        for i, (theorem, _) in enumerate(free)
    ]
    complied = [
        compliance(written[len(free) + j], correct[len(free) + j], asked, models[t.theorem_id])
        for j, (t, asked) in enumerate(instructed)
    ]
    per_theorem = {
        s.theorem_id: {
            "correctness": float(np.mean(s.correct)),
            **{name: float(np.mean(s.proxies[name])) for name in PER_PROOF},
            "diversity": s.diversity,
        }
        for s in scored
    }
    free_texts = [text for s in scored for text in s.texts]
    free_correct = [ok for s in scored for ok in s.correct]
    measures: dict[str, float] = {
        "correctness": float(np.mean(free_correct)),
        **{
            name: float(np.mean([v for s in scored for v in s.proxies[name]])) for name in PER_PROOF
        },
        "diversity": float(np.mean([s.diversity for s in scored])),
        "adaptivity": float(np.mean(complied)),
    }
    measures["proofrank"] = float(np.mean([measures[name] for name in PER_PROOF]))
    return {
        "measures": measures,
        "instructed_correctness": float(np.mean([ok for c in correct[len(free) :] for ok in c])),
        "words": float(np.mean([len(words(t)) for t in free_texts])),
        "unparsed": sorted({e for t in free_texts for e in unparsed(t)})[:20],
        "per_theorem": per_theorem,
        "example": {"theorem_id": scored[0].theorem_id, "text": scored[0].texts[0]},
    }
