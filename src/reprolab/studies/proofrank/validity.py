"""Discriminant validity: how much each proxy moves under each perturbation of the corpus's
correct human proofs (the first table's cells, before averaging).

For a proof p of theorem t, a perturbation and a seed, the change of each proxy is:

* conciseness, computational ease, cognitive simplicity: the proxy of the perturbed text minus
  the proxy of p (references: t's correct proofs; both correct by construction);
* diversity: the diversity of t's correct proofs with p replaced by the perturbed text (for
  duplication, perturb.WHOLE_SET: every proof replaced by it), minus that of t's proofs as they
  are; embeddings from `embed`, techniques from the classifier, so
  the set is measured the same way before and after;
* adaptivity: 1[classifier(perturbed) = p's technique] − 1[classifier(p) = p's technique].

The technique classifier is cross-fitted by theorem (`crossfit`): the model that labels t's
proofs never saw t, so adaptivity is not measured on the classifier's own training proofs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from reprolab.studies.proofrank.corpus import Theorem
from reprolab.studies.proofrank.perturb import PERTURBATIONS, WHOLE_SET, perturb
from reprolab.studies.proofrank.proxies import (
    Scales,
    adaptivity,
    cognitive_simplicity,
    computational_ease,
    conciseness,
    diversity,
)
from reprolab.studies.proofrank.technique import predict, train_classifier

PROXIES = (
    "conciseness",
    "computational_ease",
    "cognitive_simplicity",
    "diversity",
    "adaptivity",
)
"""The five proxies, in table order."""
Embed = Callable[[Sequence[str]], np.ndarray]


@dataclass(frozen=True)
class Delta:
    """One perturbed proof's change of one proxy."""

    perturbation: str
    theorem_id: str
    proof_id: str
    seed: int
    proxy: str
    delta: float


def crossfit(
    theorems: Sequence[Theorem], regularisation: float, held: Sequence[Theorem] | None = None
) -> dict[str, Any]:
    """Per theorem of `held` (default: all of `theorems`) a technique classifier trained on the
    correct proofs of every other theorem of `theorems`; theorems of `held` that are not among
    `theorems` share one classifier trained on all of them."""

    def fit(exclude: str | None) -> Any:
        train = [p for t in theorems if t.theorem_id != exclude for p in t.proofs if p.correct]
        return train_classifier(
            [p.text for p in train], [p.technique for p in train], regularisation
        )

    known = {t.theorem_id for t in theorems}
    shared = None
    models = {}
    for theorem in theorems if held is None else held:
        if theorem.theorem_id in known:
            models[theorem.theorem_id] = fit(theorem.theorem_id)
        else:
            shared = fit(None) if shared is None else shared
            models[theorem.theorem_id] = shared
    return models


def per_proof(text: str, references: Sequence[str], scales: Scales) -> dict[str, float]:
    """The three per-proof proxies of a correct proof."""
    return {
        "conciseness": conciseness(text, references, True),
        "computational_ease": computational_ease(text, scales, True),
        "cognitive_simplicity": cognitive_simplicity(text, scales, True),
    }


def deltas(
    theorems: Sequence[Theorem],
    seeds: Sequence[int],
    scales: Scales,
    models: dict[str, Any],
    embed: Embed,
) -> Iterator[Delta]:
    """Every (perturbation, correct proof, seed)'s change of every proxy (module docstring);
    a perturbation that cannot apply to a proof (no other proof to swap in) is skipped."""
    for theorem in theorems:
        good = [p for p in theorem.proofs if p.correct]
        texts = [p.text for p in good]
        model = models[theorem.theorem_id]
        labels = predict(model, texts)
        before_diversity = diversity(embed(texts), labels)
        for index, proof in enumerate(good):
            before = per_proof(proof.text, texts, scales)
            before["diversity"] = before_diversity
            before["adaptivity"] = adaptivity([labels[index]], proof.technique)
            for name in PERTURBATIONS:
                for seed in seeds:
                    new = perturb(name, proof, theorem, seed)
                    if new is None:
                        continue
                    after = per_proof(new, texts, scales)
                    label = predict(model, [new])[0]
                    if name in WHOLE_SET:
                        swapped, swapped_labels = [new] * len(texts), [label] * len(texts)
                    else:
                        swapped = [*texts[:index], new, *texts[index + 1 :]]
                        swapped_labels = [*labels[:index], label, *labels[index + 1 :]]
                    after["diversity"] = diversity(embed(swapped), swapped_labels)
                    after["adaptivity"] = adaptivity([label], proof.technique)
                    for proxy in PROXIES:
                        yield Delta(
                            name,
                            theorem.theorem_id,
                            proof.proof_id,
                            seed,
                            proxy,
                            after[proxy] - before[proxy],
                        )


def tfidf_embedder(texts: Sequence[str]) -> Embed:
    """Embeddings for diversity: a TF-IDF (word unigrams, sublinear counts) fitted on `texts`
    (the corpus's correct proofs)."""
    from sklearn.feature_extraction.text import TfidfVectorizer

    vectorizer = TfidfVectorizer(sublinear_tf=True).fit(list(texts))
    return lambda batch: vectorizer.transform(list(batch)).toarray()


def mean_matrix(found: Sequence[Delta]) -> dict[str, dict[str, float]]:
    """{perturbation: {proxy: mean change}}, over proofs and seeds."""
    cells: dict[tuple[str, str], list[float]] = {}
    for d in found:
        cells.setdefault((d.perturbation, d.proxy), []).append(d.delta)
    return {
        name: {proxy: float(np.mean(cells[(name, proxy)])) for proxy in PROXIES}
        for name in PERTURBATIONS
        if (name, PROXIES[0]) in cells
    }
