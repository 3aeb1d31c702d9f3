"""The discriminant-validity changes on a few theorems of the bundled corpus: the control moves
nothing, padding moves conciseness only, and the classifier is cross-fitted by theorem."""

from __future__ import annotations

import pytest

from reprolab.studies.proofrank.corpus import bundled_files, read_corpus
from reprolab.studies.proofrank.proxies import Scales
from reprolab.studies.proofrank.validity import (
    PROXIES,
    crossfit,
    deltas,
    mean_matrix,
    tfidf_embedder,
)


@pytest.fixture(scope="module")
def matrix():
    theorems, _ = read_corpus(bundled_files())
    if not theorems:
        pytest.skip("the bundled corpus is not written yet")
    correct = [p.text for t in theorems for p in t.proofs if p.correct]
    chosen = theorems[::10]  # a theorem of every part
    models = crossfit(theorems, regularisation=0.3, held=chosen)
    assert set(models) == {t.theorem_id for t in chosen}
    found = list(deltas(chosen, [0], Scales.of(correct), models, tfidf_embedder(correct)))
    return mean_matrix(found)


def test_the_identity_control_moves_no_proxy(matrix):
    assert all(matrix["identity"][proxy] == 0.0 for proxy in PROXIES)


def test_padding_lowers_conciseness_and_leaves_the_cost_proxies_alone(matrix):
    padding = matrix["padding"]
    assert padding["conciseness"] < -0.3
    assert padding["computational_ease"] == padding["cognitive_simplicity"] == 0.0


def test_each_detour_lowers_its_own_cost_proxy(matrix):
    assert matrix["computational_detour"]["computational_ease"] < 0
    assert matrix["computational_detour"]["cognitive_simplicity"] == 0.0
    assert matrix["cognitive_detour"]["cognitive_simplicity"] < 0
    assert matrix["cognitive_detour"]["computational_ease"] == 0.0
    assert matrix["technique_swap"]["adaptivity"] < 0 and matrix["duplication"]["diversity"] < 0
