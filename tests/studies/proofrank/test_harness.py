"""The harness on retrieval backends whose proofs are known: correctness, gating, diversity
and adaptivity come out as the corpus says."""

from __future__ import annotations

import pytest

from reprolab.studies.proofrank.backends import NoncompliantBackend, RetrievalBackend
from reprolab.studies.proofrank.corpus import bundled_files, read_corpus
from reprolab.studies.proofrank.harness import MEASURES, corpus_score, requests, run_backend
from reprolab.studies.proofrank.judge import ReferenceJudge
from reprolab.studies.proofrank.proxies import Scales
from reprolab.studies.proofrank.validity import crossfit, tfidf_embedder


@pytest.fixture(scope="module")
def setting():
    theorems, _ = read_corpus(bundled_files())
    theorems = theorems[::3]  # ten theorems from every part
    good = [p.text for t in theorems for p in t.proofs if p.correct]
    scales = Scales.of(good)
    return theorems, scales, crossfit(theorems, 0.3), tfidf_embedder(good)


def run(backend, setting, n=3, seed=0):
    theorems, scales, models, embed = setting
    return run_backend(backend, theorems, ReferenceJudge(0.9), models, embed, scales, n, seed)


def test_requests_are_one_free_and_one_instructed_per_theorem_in_turn(setting):
    theorems = setting[0]
    free, instructed = requests(theorems, seed=0)
    assert [t for t, _ in free] == theorems and all(i is None for _, i in free)
    assert [t for t, _ in instructed] == theorems
    asked = {i for s in range(4) for t, i in requests(theorems, s)[1] if t is theorems[0]}
    assert asked == {p.technique for p in theorems[0].proofs if p.correct}


def test_the_best_proofs_are_correct_concise_and_not_diverse(setting):
    found = run(RetrievalBackend("best", corpus_score(setting[1])), setting)
    measures = found["measures"]
    assert list(measures) == list(MEASURES)
    assert measures["correctness"] == 1.0
    assert measures["diversity"] == pytest.approx(0.0, abs=1e-12)  # the same proof n times
    assert measures["proofrank"] == pytest.approx(
        (
            measures["conciseness"]
            + measures["computational_ease"]
            + measures["cognitive_simplicity"]
        )
        / 3
    )


def test_random_proofs_include_the_flawed_ones_and_gate_them(setting):
    theorems = setting[0]
    found = run(RetrievalBackend("random"), setting, n=4)
    share_correct = sum(p.correct for t in theorems for p in t.proofs) / sum(
        len(t.proofs) for t in theorems
    )
    assert 0.6 < found["measures"]["correctness"] < 1.0 and share_correct < 1.0
    for values in found["per_theorem"].values():
        if values["correctness"] == 0.0:
            assert values["conciseness"] == 0.0 and values["diversity"] == 0.0


def test_non_compliance_lowers_adaptivity_and_nothing_the_free_requests_see(setting):
    compliant = run(RetrievalBackend("random"), setting, n=4)["measures"]
    never = run(NoncompliantBackend(1.0), setting, n=4)["measures"]
    always = run(NoncompliantBackend(0.0), setting, n=4)["measures"]
    assert never["adaptivity"] < 0.5 * compliant["adaptivity"]
    assert always == compliant  # rate 0: random retrieval's own draws
    assert never["correctness"] == compliant["correctness"]  # free requests ask no technique
