"""The proofrank jobs behind the rules: the corpus (`proofrank_data`), the small language models
(`proofrank_lm`) and one evaluation seed (`proofrank_run`); the tuning job is tune.py.

A run job measures both tables on its seed: the discriminant validity of the proxies (every
perturbation of every correct corpus proof, drawn from the seed) and the harness (every backend
sampled with the seed). Everything the measures read is made from the corpus in the job: the
proxies' scales (the median costs of its correct proofs), the TF-IDF embedder of diversity and
the technique classifiers, cross-fitted by theorem at the regularisation proofrank_tune chose.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from reprolab.core.determinism import derive_seed, seed_everything
from reprolab.core.io import write_json, write_text
from reprolab.core.tuning import selected
from reprolab.studies.proofrank.backends import (
    Backend,
    NoncompliantBackend,
    RetrievalBackend,
    VerboseBackend,
)
from reprolab.studies.proofrank.corpus import (
    Problem,
    Theorem,
    bundled_files,
    corpus_text,
    read_corpus,
)
from reprolab.studies.proofrank.harness import corpus_score, run_backend
from reprolab.studies.proofrank.judge import Judge, ReferenceJudge
from reprolab.studies.proofrank.proxies import Scales
from reprolab.studies.proofrank.technique import predict, train_classifier
from reprolab.studies.proofrank.tune import METHOD
from reprolab.studies.proofrank.validity import crossfit, deltas, mean_matrix, tfidf_embedder

log = logging.getLogger(__name__)


def labelled_corpus() -> list[Theorem]:
    """The corpus that ships with the package, the one with technique labels (what the
    classifier learns from); a problem in it is an error, since it is the project's own."""
    theorems, problems = read_corpus(bundled_files())
    if problems:
        raise ValueError(
            "the bundled proofrank corpus has problems:\n" + "\n".join(map(str, problems))
        )
    return theorems


def regularisation(tuning_path: str | Path) -> float:
    """The classifier's regularisation that proofrank_tune chose."""
    return float(selected([tuning_path])[METHOD]["regularisation"])


def read_sources(
    params: Mapping[str, Any], tuning_path: str | Path
) -> tuple[list[Theorem], list[Problem]]:
    """The theorems the params name (`corpus`) and the problems met reading them."""
    corpus = params["corpus"]
    if corpus["files"] is None:
        return read_corpus(bundled_files())
    if corpus["format"] == "reprolab":
        return read_corpus(corpus["files"])
    from reprolab.studies.proofrank.naturalproofs import read_naturalproofs

    labelled = labelled_corpus()
    good = [p for t in labelled for p in t.proofs if p.correct]
    model = train_classifier(
        [p.text for p in good], [p.technique for p in good], regularisation(tuning_path)
    )
    theorems: list[Theorem] = []
    problems: list[Problem] = []
    for path in corpus["files"]:
        found, bad = read_naturalproofs(
            path, lambda texts: predict(model, texts), corpus.get("split"), corpus.get("limit")
        )
        theorems += found
        problems += bad
    return theorems, problems


def write_data(
    params: Mapping[str, Any],
    tuning_path: str | Path,
    corpus_path: str | Path,
    report_path: str | Path,
) -> dict[str, Any]:
    """Read the corpus, log and record every problem, and write the theorems as one JSONL file
    (what every later job reads); no theorem at all is an error listing the problems."""
    theorems, problems = read_sources(params, tuning_path)
    for problem in problems:
        log.warning("proofrank corpus: %s", problem)
    if not theorems:
        raise ValueError(
            "proofrank: no theorem could be read from the corpus:\n" + "\n".join(map(str, problems))
        )
    report = {
        "theorems": len(theorems),
        "proofs": sum(len(t.proofs) for t in theorems),
        "correct": sum(p.correct for t in theorems for p in t.proofs),
        "problems": [str(p) for p in problems],
    }
    write_text(corpus_path, corpus_text(theorems))
    write_json(report_path, report)
    return report


def train_backend(
    params: Mapping[str, Any], name: str, corpus_path: str | Path, out_dir: str | Path, threads: int
) -> dict[str, Any]:
    """Train the small language model of backend `name` (kind lm) for its steps into `out_dir`
    (with its training record, lm.TRAINING_RECORD)."""
    from reprolab.studies.proofrank.lm import train_lm

    theorems, _ = read_corpus([corpus_path])
    steps = int(params["backends"][name]["steps"])
    spec = params["lm"]
    return train_lm(theorems, spec["model"], steps, int(spec["seed"]), out_dir, threads)


def make_backends(
    params: Mapping[str, Any], scales: Scales, lm_dirs: Mapping[str, str]
) -> dict[str, Backend]:
    """Every backend of the params (workflow_io's kinds), each built once (a verbose backend
    wraps the very backend its `inner` names)."""
    generation = params["generation"]
    specs = params["backends"]
    built: dict[str, Backend] = {}

    def build(name: str) -> Backend:
        spec = specs[name]
        kind = spec["kind"]
        if kind == "retrieval":
            return RetrievalBackend(
                spec["mode"], corpus_score(scales) if spec["mode"] == "best" else None
            )
        if kind == "noncompliant":
            return NoncompliantBackend(float(spec["rate"]))
        if kind == "verbose":
            return VerboseBackend(backend(spec["inner"]))
        from reprolab.studies.proofrank.hf_backend import CausalLMBackend

        folder = lm_dirs[name] if kind == "lm" else spec["folder"]
        return CausalLMBackend(
            folder,
            max_new_tokens=int(generation["max_new_tokens"]),
            temperature=float(generation["temperature"]),
            batch_size=int(generation["batch_size"]),
            device=params["generation"]["device"],
        )

    def backend(name: str) -> Backend:
        """The backend `name`, built once (a verbose backend's inner one may come later)."""
        if name not in built:
            built[name] = build(name)
        return built[name]

    return {name: backend(name) for name in specs}


def make_judge(params: Mapping[str, Any]) -> Judge:
    """The correctness judge: the reference judge (judge.py) or a local LM judge."""
    spec = params["judge"]
    if spec["kind"] == "reference":
        return ReferenceJudge(float(spec["threshold"]))
    from reprolab.studies.proofrank.hf_backend import LMJudge

    return LMJudge(
        spec["folder"], batch_size=int(spec["batch_size"]), device=params["generation"]["device"]
    )


def run_seed(
    params: Mapping[str, Any],
    seed: int,
    corpus_path: str | Path,
    tuning_path: str | Path,
    lm_dirs: Mapping[str, str],
    out_path: str | Path,
    threads: int,
) -> dict[str, Any]:
    """Both tables' measures on one evaluation seed (module docstring); writes metrics.json."""
    seed_everything(derive_seed(seed, "proofrank"), threads)
    theorems, _ = read_corpus([corpus_path])
    good = [p.text for t in theorems for p in t.proofs if p.correct]
    scales = Scales.of(good)
    embed = tfidf_embedder(good)
    strength = regularisation(tuning_path)
    labelled = theorems if params["corpus"]["format"] == "reprolab" else labelled_corpus()
    models = crossfit(labelled, strength, held=theorems)
    validity = mean_matrix(list(deltas(theorems, [seed], scales, models, embed)))
    judge = make_judge(params)
    corpus_proofs = [(t, p) for t in theorems for p in t.proofs]
    verdicts = judge.judge_batch([(t, p.text) for t, p in corpus_proofs])
    agree = sum(v == p.correct for v, (_, p) in zip(verdicts, corpus_proofs, strict=True))
    n = int(params["samples"])
    harness = {
        name: run_backend(backend, theorems, judge, models, embed, scales, n, seed)
        for name, backend in make_backends(params, scales, lm_dirs).items()
    }
    metrics = {
        "seed": seed,
        "theorems": len(theorems),
        "regularisation": strength,
        "scales": {"computation": scales.computation, "cognition": scales.cognition},
        "judge_on_corpus": {"agree": agree, "proofs": len(corpus_proofs)},
        "validity": validity,
        "harness": harness,
    }
    write_json(out_path, metrics)
    return metrics


def lm_dirs_of(names: Sequence[str], folders: Sequence[str]) -> dict[str, str]:
    """{backend: its trained model folder}, from the rule's names and inputs in one order."""
    if len(names) != len(folders):
        raise ValueError(
            f"proofrank: {len(folders)} model folders for the lm backends {list(names)}"
        )
    return dict(zip(names, folders, strict=True))
