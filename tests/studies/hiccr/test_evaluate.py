"""hiccr's checkpoint metrics: accuracy, functional dependence, attention and gradient share,
each in its range, repeatable, and reflecting a model that reads the image."""

from __future__ import annotations

import pytest
import torch

from reprolab.studies.hiccr.data import answer_ids
from reprolab.studies.hiccr.evaluate import evaluate


def test_metrics_are_in_range_repeatable_and_leave_the_model_alone(policy, tokenizer, visarith):
    answers = answer_ids(tokenizer, visarith.test.answers)
    before = [p.detach().clone() for p in policy.model.parameters()]
    first = evaluate(policy, tokenizer, visarith.test, answers, batch_size=4, last_layers=2)
    again = evaluate(policy, tokenizer, visarith.test, answers, batch_size=4, last_layers=2)
    regrouped = evaluate(policy, tokenizer, visarith.test, answers, batch_size=7, last_layers=2)
    assert first == again
    for name, value in regrouped.as_dict().items():  # batches change float sums only
        assert value == pytest.approx(first.as_dict()[name], abs=1e-5), name
    assert all(torch.equal(a, b) for a, b in zip(before, policy.model.parameters(), strict=True))
    assert 0.0 <= first.accuracy <= 1.0 and 0.0 <= first.blind_accuracy <= 1.0
    assert first.dependence == first.accuracy - first.blind_accuracy
    assert 0.0 < first.attention < 1.0 and 0.0 < first.gradient_share < 1.0


def test_a_model_that_sees_every_image_alike_does_not_depend_on_it(policy, tokenizer, visarith):
    projector = policy.model.model.multi_modal_projector
    with torch.no_grad():
        for parameter in projector.parameters():
            parameter.zero_()
    answers = answer_ids(tokenizer, visarith.test.answers)
    metrics = evaluate(policy, tokenizer, visarith.test, answers, batch_size=5, last_layers=1)
    assert metrics.accuracy == metrics.blind_accuracy and metrics.dependence == 0.0
