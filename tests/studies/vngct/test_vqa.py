"""VQA accuracy: the official answer normalisation and the soft score over human answers."""

from __future__ import annotations

import pytest

from reprolab.studies.vngct.vqa import normalize_answer, vqa_accuracy


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Yes.", "yes"),  # lowercase; a period not followed by a digit goes
        ("2.5", "2.5"),  # one followed by a digit stays
        ("\tyes\n", "yes"),  # tabs and newlines are spaces, then stripped
        ("two dogs", "2 dogs"),  # number words become digits
        ("none", "0"),
        ("ten.", "10"),
        ("a dog", "dog"),  # articles go
        ("The Cat", "cat"),
        ("an apple", "apple"),
        ("dont", "don't"),  # contractions get their apostrophe
        ("whats that", "what's that"),
        ("1,000", "1000"),  # a number with a comma: every mark is removed
        ("red-and-white", "red and white"),  # a mark between words is a space
        ("red - white", "red white"),  # a mark next to a space is removed
        ("hello?", "hello"),
        ("Its a cat!", "its cat"),
    ],
)
def test_normalize_answer_follows_the_official_script(text, expected):
    assert normalize_answer(text) == expected


@pytest.mark.parametrize(
    ("prediction", "answers", "expected"),
    [
        # 3 of 10 say yes: leaving out a "yes" leaves 2 matches (2/3), leaving out a "no" 3 (1)
        ("yes", ["yes"] * 3 + ["no"] * 7, (3 * 2 / 3 + 7 * 1) / 10),
        ("no", ["yes"] * 3 + ["no"] * 7, 1.0),
        ("yes", ["yes"] + ["no"] * 9, 9 * (1 / 3) / 10),  # the lone "yes" left out: 0
        ("Two.", ["2"] * 2 + ["3"] * 8, (2 * 1 / 3 + 8 * 2 / 3) / 10),  # normalised first
        ("maybe", ["yes"] * 10, 0.0),
        ("The Dog", ["dog"], 1.0),  # one ground-truth answer: normalised exact match
        ("A", ["A"], 1.0),  # ScienceQA's option letters
        ("cat", ["dog"], 0.0),
    ],
)
def test_vqa_accuracy_averages_min_matches_over_3_over_leave_one_out_subsets(
    prediction, answers, expected
):
    assert vqa_accuracy(prediction, answers) == pytest.approx(expected)


def test_vqa_accuracy_needs_an_answer():
    with pytest.raises(ValueError, match="at least one ground-truth answer"):
        vqa_accuracy("yes", [])
