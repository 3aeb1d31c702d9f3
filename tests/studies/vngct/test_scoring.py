"""Routing a task's generated answers to its declared metric."""

from __future__ import annotations

import numpy as np
import pytest

from reprolab.core.params import load_schema
from reprolab.studies.vngct.scoring import METRIC_LABELS, METRICS, score_answers, task_metrics

TASKS = ["TextVQA", "Grounding"]


def test_every_metric_has_a_label_and_the_schema_lists_them():
    schema = load_schema("studies/vngct.schema.yaml")["properties"]["scoring"]
    allowed = schema["properties"]["metrics"]["additionalProperties"]["enum"]
    assert sorted(METRICS) == sorted(METRIC_LABELS) == sorted(allowed)


def test_score_answers_dispatches_to_the_metric():
    vqa = score_answers("vqa_accuracy", ["yes", "two"], [["yes"] * 10, ["2"]])
    np.testing.assert_allclose(vqa, [1.0, 1.0])
    boxes = score_answers("iou", ["[0, 0, 1, 1]", "no box"], [["[0, 0, 1, 1]"]] * 2)
    np.testing.assert_array_equal(boxes, [1.0, 0.0])
    cider = score_answers("cider", ["a dog runs", "a cat"], [["a dog runs"], ["a cat sleeps"]])
    assert cider[0] == pytest.approx(7.5)


def test_score_answers_refuses_an_unknown_metric_and_two_reference_boxes():
    with pytest.raises(ValueError, match="unknown metric 'bleu'; expected one of vqa_accuracy"):
        score_answers("bleu", ["a"], [["a"]])
    with pytest.raises(ValueError, match="item 0: 2 reference boxes, expected exactly one"):
        score_answers("iou", ["[0, 0, 1, 1]"], [["[0, 0, 1, 1]", "[0, 0, 1, 1]"]])


def test_task_metrics_follow_the_stream_order():
    scoring = {"max_new_tokens": 4, "metrics": {"Grounding": "iou", "TextVQA": "vqa_accuracy"}}
    assert list(task_metrics(scoring, TASKS).items()) == [
        ("TextVQA", "vqa_accuracy"),
        ("Grounding", "iou"),
    ]


@pytest.mark.parametrize(
    ("metrics", "expected"),
    [
        ({"TextVQA": "vqa_accuracy"}, "no metric for task\\(s\\) Grounding"),
        (
            {"TextVQA": "vqa_accuracy", "Grounding": "iou", "GQA": "vqa_accuracy"},
            "GQA name no task of the stream",
        ),
    ],
)
def test_task_metrics_name_the_key_and_the_tasks(metrics, expected):
    with pytest.raises(ValueError, match=f"vngct.scoring.metrics: {expected}"):
        task_metrics({"max_new_tokens": 4, "metrics": metrics}, TASKS)
