"""Grounding: boxes parsed from text answers and IoU ≥ 0.5 accuracy."""

from __future__ import annotations

import numpy as np
import pytest

from reprolab.studies.vngct.grounding import grounding_hits, iou, parse_box


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[0.12, 0.30, 0.55, 0.80]", (0.12, 0.30, 0.55, 0.80)),
        ("The box is [0.1,0.2,0.3,0.4].", (0.1, 0.2, 0.3, 0.4)),
        ("[0, 1, .5, 1.0] then [0.9, 0.9, 1, 1]", (0.0, 1.0, 0.5, 1.0)),
        ("[0.1, 0.2, 0.3]", None),
        ("a dog on the left", None),
        ("", None),
    ],
)
def test_parse_box_reads_the_first_list_of_four_numbers(text, expected):
    assert parse_box(text) == expected


@pytest.mark.parametrize(
    ("first", "second", "expected"),
    [
        ((0, 0, 2, 2), (0, 0, 2, 2), 1.0),
        ((0, 0, 2, 2), (1, 1, 3, 3), 1 / 7),  # overlap 1, union 4 + 4 − 1
        ((0, 0, 1, 1), (0, 0, 0.5, 1), 0.5),
        ((0, 0, 1, 1), (2, 2, 3, 3), 0.0),
        ((1, 1, 0, 0), (0, 0, 1, 1), 0.0),  # corners swapped: no area
    ],
)
def test_iou_of_known_boxes(first, second, expected):
    assert iou(first, second) == pytest.approx(expected)


def test_grounding_hits_count_iou_of_at_least_one_half_and_unreadable_answers_miss():
    reference = "[0.0, 0.0, 1.0, 1.0]"
    predictions = [
        "[0.0, 0.0, 1.0, 1.0]",  # 1
        "[0.0, 0.0, 0.5, 1.0]",  # 0.5: a hit
        "[0.0, 0.0, 0.49, 1.0]",  # 0.49: a miss
        "the dog on the left",  # no box: a miss
        "[0.5, 0.5, 0.2, 0.2]",  # no area: a miss
    ]
    hits = grounding_hits(predictions, [reference] * len(predictions))
    np.testing.assert_array_equal(hits, [1.0, 1.0, 0.0, 0.0, 0.0])


def test_a_reference_without_a_box_is_refused():
    with pytest.raises(ValueError, match=r"item 1: reference answer 'left' holds no box"):
        grounding_hits(["[0, 0, 1, 1]", "[0, 0, 1, 1]"], ["[0, 0, 1, 1]", "left"])
