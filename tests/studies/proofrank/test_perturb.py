"""Each perturbation changes what it claims to and leaves the other axes alone."""

from __future__ import annotations

import pytest

from reprolab.studies.proofrank.corpus import Proof, Theorem
from reprolab.studies.proofrank.perturb import EXPECTED, PERTURBATIONS, perturb
from reprolab.studies.proofrank.proxies import (
    Scales,
    cognitive_simplicity,
    computational_ease,
    conciseness,
)
from reprolab.studies.proofrank.text import structure

DIRECT = Proof(
    "t-a",
    "direct",
    True,
    "test",
    "Expand the square.\nThen $(a - b)^2 = a^2 - 2*a*b + b^2$.\n"
    "A square is never negative, so $a^2 - 2*a*b + b^2 >= 0$.\n"
    "Hence $a^2 + b^2 >= 2*a*b$.\nThis completes the proof.",
)
CONTRADICTION = Proof(
    "t-b",
    "contradiction",
    True,
    "test",
    "Suppose $a^2 + b^2 < 2*a*b$.\nThen $(a - b)^2 < 0$, which is impossible for a square.\n"
    "This completes the proof.",
)
ALSO_DIRECT = Proof(
    "t-c", "direct", True, "test", "Then $(a - b)^2 >= 0$.\nThis completes the proof."
)
WRONG = Proof("t-d", "parity", False, "test", "Obvious.\nThis completes the proof.", "no argument")
THEOREM = Theorem(
    "t", "algebra", "For reals a, b: a^2 + b^2 >= 2ab.", (DIRECT, CONTRADICTION, ALSO_DIRECT, WRONG)
)
SCALES = Scales(10.0, 2.0)


def scores(text: str) -> tuple[float, float, float]:
    return (
        conciseness(text, [DIRECT.text], True),
        computational_ease(text, SCALES, True),
        cognitive_simplicity(text, SCALES, True),
    )


@pytest.mark.parametrize(
    ("name", "falls"),
    [("padding", 0), ("computational_detour", 1), ("cognitive_detour", 2)],
)
def test_a_perturbation_lowers_its_own_proxy_and_no_other_cost_proxy(name, falls):
    before = scores(DIRECT.text)
    after = scores(perturb(name, DIRECT, THEOREM, seed=3))
    drops = [b - a for b, a in zip(before, after, strict=True)]
    assert drops[falls] > 0
    others = [d for k, d in enumerate(drops) if k not in (falls, 0)]  # any word moves C
    assert all(d == pytest.approx(0.0) for d in others)


def test_padding_doubles_the_length_in_fillers_only():
    padded = perturb("padding", DIRECT, THEOREM, seed=1)
    assert len(padded.split()) >= 2 * len(DIRECT.text.split())
    assert structure(padded) == structure(DIRECT.text) and padded.count("$") == DIRECT.text.count(
        "$"
    )


def test_swaps_take_another_correct_proof_of_the_theorem():
    swapped = perturb("technique_swap", DIRECT, THEOREM, seed=0)
    assert swapped == CONTRADICTION.text  # the only correct proof of another technique
    assert perturb("duplication", DIRECT, THEOREM, seed=0) == DIRECT.text  # its set is copied
    alone = Theorem("u", "algebra", "s", (DIRECT,))
    assert perturb("technique_swap", DIRECT, alone, seed=0) is None


def test_perturbations_repeat_by_seed_and_the_control_changes_nothing():
    for name in PERTURBATIONS:
        assert perturb(name, DIRECT, THEOREM, 5) == perturb(name, DIRECT, THEOREM, 5), name
    assert perturb("padding", DIRECT, THEOREM, 5) != perturb("padding", DIRECT, THEOREM, 6)
    assert perturb("identity", DIRECT, THEOREM, 5) == DIRECT.text
    assert set(EXPECTED) == set(PERTURBATIONS) and EXPECTED["identity"] is None
    with pytest.raises(ValueError, match="unknown perturbation 'shuffle'"):
        perturb("shuffle", DIRECT, THEOREM, 0)
