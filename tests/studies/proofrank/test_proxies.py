"""The five proxies on hand-made proofs with known values, gated by correctness."""

from __future__ import annotations

import numpy as np
import pytest

from reprolab.studies.proofrank.proxies import (
    Scales,
    adaptivity,
    cognitive_simplicity,
    computational_ease,
    conciseness,
    diversity,
    technique_entropy,
)

SHORT = "Then $(a - b)^2 >= 0$.\nHence $a^2 + b^2 >= 2*a*b$."
LONG = (
    SHORT
    + "\nWe record this fact before moving on.\nThe next step follows the same line of thought."
)
SCALES = Scales(computation=10.0, cognition=4.0)


def test_conciseness_is_the_shortest_reference_over_the_candidate_capped_at_one():
    assert conciseness(SHORT, [SHORT, LONG], correct=True) == 1.0
    assert conciseness(LONG, [SHORT], correct=True) == pytest.approx(12 / 28)  # tokens
    assert conciseness(SHORT, [LONG], correct=True) == 1.0  # never above one
    assert conciseness(SHORT, [SHORT], correct=False) == 0.0  # gated by correctness


def test_the_cost_proxies_fall_with_their_costs_and_are_gated():
    # SHORT: operations 2 + 1 (first) and 6 (second), 2 calculation lines, log10(1 + 2)
    cost = 9 + 2 + np.log10(3)
    assert computational_ease(SHORT, SCALES, True) == pytest.approx(1 / (1 + cost / 10))
    detour = SHORT + "\nThen $37*41 = 1517$."
    assert computational_ease(detour, SCALES, True) < computational_ease(SHORT, SCALES, True)
    assert cognitive_simplicity(SHORT, SCALES, True) == 1.0  # no structure at all
    nested = "Suppose the sum is odd.\nCase 1: the first term is even.\n" + SHORT
    assert cognitive_simplicity(nested, SCALES, True) == pytest.approx(1 / (1 + 6 / 4))
    assert (
        computational_ease(SHORT, SCALES, False) == cognitive_simplicity(SHORT, SCALES, False) == 0
    )


def test_scales_are_the_median_costs_of_the_reference_proofs():
    scales = Scales.of([SHORT, SHORT, "Suppose $n = 1$."])
    assert scales.cognition == 1.0  # costs 0, 0, 1: median 0 becomes 1
    with pytest.raises(ValueError, match="no proofs"):
        Scales.of([])


def test_diversity_is_zero_for_copies_and_grows_with_distinct_techniques():
    same = np.tile([[1.0, 2.0, 0.0]], (3, 1))
    assert diversity(same, ["induction"] * 3) == pytest.approx(0.0)
    apart = np.eye(3)
    assert diversity(apart, ["induction", "parity", "direct"]) == pytest.approx(
        0.5 + 0.5 * np.log(3) / np.log(6)
    )
    assert technique_entropy(["induction", "parity"]) == pytest.approx(np.log(2) / np.log(6))
    assert diversity(apart[:1], ["direct"]) == 0.0


def test_adaptivity_is_the_share_of_proofs_in_the_technique_asked_for():
    assert adaptivity(["induction", "direct", "induction", "induction"], "induction") == 0.75
    with pytest.raises(ValueError, match="at least one"):
        adaptivity([], "induction")
