"""The continual-tuning loop: necessity, calibration, reduction to SeqFT, determinism, swaps.

Card A7.2 (necessity), A7.3 (calibration) and A7.4 (reduction), plus the loop's contracts.
Every run here is a few optimiser steps of a tiny adapter on the conftest's two-task stream.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest
import torch

from reprolab.studies.vngct.adapter import MLLMAdapter
from reprolab.studies.vngct.continual import (
    _EWC,
    Method,
    StreamResult,
    Training,
    _step,
    calibration_kl,
    evaluate,
    necessity,
    run_stream,
    swap_accuracy,
)
from reprolab.studies.vngct.gates import NecessityGate, RandomGate, shifted
from reprolab.studies.vngct.generation import AnswerScorer, greedy_answers
from reprolab.studies.vngct.tensors import IGNORE, answer_loss
from reprolab.studies.vngct.vqa import vqa_accuracy

pytestmark = pytest.mark.usefixtures("torch_one_thread")

TRAINING = Training(batch_size=16, eval_batch_size=32)
EPOCHS = [1, 1]


def _run(adapter, stream, method, training=TRAINING, seed=0, **kwargs) -> StreamResult:
    features = adapter.tower_features(stream.images.pixels())
    return run_stream(adapter, features, stream.tasks, EPOCHS, method, training, seed, **kwargs)


def _state(adapter: MLLMAdapter) -> dict[str, torch.Tensor]:
    return {name: value.detach().clone() for name, value in adapter.state_dict().items()}


def _assert_same_state(one: dict, two: dict) -> None:
    assert one.keys() == two.keys()
    different = [name for name in one if not torch.equal(one[name], two[name])]
    assert not different, f"tensors differ: {different[:5]}"


def _assert_same_result(one: StreamResult, two: StreamResult) -> None:
    for field in ("correct", "exact"):
        for row_one, row_two in zip(getattr(one, field), getattr(two, field), strict=True):
            for a, b in zip(row_one, row_two, strict=True):
                np.testing.assert_array_equal(a, b)
    assert one.train_loss == two.train_loss
    np.testing.assert_equal(one.routing, two.routing)  # NaN == NaN here
    for snaps in ("projectors", "others"):
        for a, b in zip(getattr(one, snaps), getattr(two, snaps), strict=True):
            _assert_same_state(a, b)


# --- necessity (A7.2) -------------------------------------------------------------------------


def test_necessity_is_zero_without_a_projector(make_adapter, stream):
    adapter = make_adapter(0)
    batch = stream.tasks[0].test
    image = adapter.tower_features(stream.images.pixels())[batch.image]
    before = necessity(adapter, batch, image, shifted(image))
    assert before.shape == (len(batch),) and (before != 0).any()  # the image matters a little
    projector = adapter.model.model.multi_modal_projector
    with torch.no_grad():
        projector.linear_1.weight.zero_()
        projector.linear_2.weight.zero_()
    assert torch.equal(necessity(adapter, batch, image, shifted(image)), torch.zeros(len(batch)))


def test_necessity_is_large_once_the_answer_is_read_off_the_image(make_adapter, stream):
    """300 AdamW steps on the position task (chance: ln 4 = 1.39 nats) teach a tiny model to
    read the quadrant; on held-out items the shifted neighbour's image then costs nats."""
    adapter = make_adapter(0)
    features = adapter.tower_features(stream.images.pixels())
    task = stream.tasks[0]
    trainable = [p for p in adapter.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(trainable, lr=3e-3, weight_decay=0.0)
    generator = torch.Generator().manual_seed(0)
    adapter.train()
    for _ in range(300):
        batch = task.train.take(torch.randint(0, len(task.train), (16,), generator=generator))
        logits = adapter(batch.input_ids, batch.attention_mask, features[batch.image])
        loss = answer_loss(logits, batch.labels).mean()
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    test = task.test
    image = features[test.image]
    v = necessity(adapter, test, image, shifted(image))
    with torch.no_grad():
        own_loss = answer_loss(adapter(test.input_ids, test.attention_mask, image), test.labels)
    assert float(own_loss.mean()) < 1.0  # it did learn the task (chance: 1.39)
    assert float(v.mean()) > 1.0


def test_the_steps_gate_reads_the_necessity_of_its_own_forward(make_adapter, stream):
    """The loop reuses the training forward (image and null in one batch) for v: its gate is
    the one `necessity` gives on the model before the step."""
    training = Training(batch_size=16, gate_floor=-1.0, gate_noise_quantile=0.45)
    _, gate, *_ = _one_step(make_adapter, stream, Method(gate="necessity"), training)
    adapter = _perturbed(make_adapter)
    batch = stream.tasks[0].train.take(torch.arange(16))
    image = adapter.tower_features(stream.images.pixels())[batch.image]
    v = necessity(adapter, batch, image, shifted(image))
    expected = NecessityGate(training.gate_floor, training.gate_noise_quantile)(v)
    assert torch.equal(gate, expected) and 0 < int(gate.sum()) < len(gate)


# --- calibration (A7.3) -----------------------------------------------------------------------


def _kl(p_logits: torch.Tensor, q_logits: torch.Tensor) -> float:
    p, q = torch.softmax(p_logits.double(), -1), torch.softmax(q_logits.double(), -1)
    return float((p * (p / q).log()).sum())


def test_calibration_kl_weights_samples_and_reads_only_answer_positions():
    generator = torch.Generator().manual_seed(0)
    logits = torch.randn(3, 4, 6, generator=generator)
    null = torch.randn(3, 4, 6, generator=generator)
    labels = torch.full((3, 4), IGNORE)
    labels[0, 2], labels[1, 1:3], labels[2, 3] = 1, 2, 3
    per_sample = [
        _kl(logits[0, 2], null[0, 2]),
        (_kl(logits[1, 1], null[1, 1]) + _kl(logits[1, 2], null[1, 2])) / 2,
        _kl(logits[2, 3], null[2, 3]),
    ]
    weight = torch.tensor([1.0, 0.0, 1.0])
    value = calibration_kl(logits, null, labels, weight)
    assert float(value) == pytest.approx((per_sample[0] + per_sample[2]) / 2, rel=1e-5)
    # a sample of weight 0 does not count, whatever its null
    other = null.clone()
    other[1] = 50 * torch.randn(4, 6, generator=generator)
    assert torch.equal(calibration_kl(logits, other, labels, weight), value)
    # nor do positions outside the answer
    other = null.clone()
    other[:, 0] = 0.0
    assert torch.equal(calibration_kl(logits, other, labels, weight), value)
    assert float(calibration_kl(logits, logits, labels, torch.ones(3))) == pytest.approx(0.0)
    assert float(calibration_kl(logits, null, labels, torch.zeros(3))) == 0.0


def _perturbed(make_adapter) -> MLLMAdapter:
    """A fresh adapter with seeded random calibration weights (at init the zero last layer
    would give the first layer no gradient at all)."""
    adapter = make_adapter(0)
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for parameter in adapter.calibration_parameters():
            parameter.copy_(0.5 * torch.randn(parameter.shape, generator=generator))
    return adapter


def _one_step(make_adapter, stream, method, training, gate_seed=0):
    """One `_step` on a fresh (perturbed) adapter; every parameter's .grad and the gate."""
    adapter = _perturbed(make_adapter)
    features = adapter.tower_features(stream.images.pixels())
    batch = stream.tasks[0].train.take(torch.arange(16))
    trainable = [p for p in adapter.parameters() if p.requires_grad]
    optimizer = torch.optim.SGD(trainable, lr=0.1)
    gates = {
        "necessity": NecessityGate(training.gate_floor, training.gate_noise_quantile),
        "random": RandomGate(gate_seed),
    }
    gates["random"].rate = 1.0
    ewc = _EWC(adapter.language_parameters() + adapter.visual_parameters(), 0.0)
    _, gate = _step(adapter, features, batch, method, training, optimizer, ewc, gates)
    grads = {
        name: None if p.grad is None else p.grad.clone()
        for name, p in adapter.named_parameters()
        if p.requires_grad
    }
    return grads, gate, adapter, features, batch


def test_the_invariance_loss_reaches_only_the_calibration_path(make_adapter, stream):
    """A `_step` with μ = 1 against one with μ = 0 (same forward, same gate): the language and
    visual gradients are bit-identical, the calibration gradients differ by exactly
    ∇_φ μ·KL over the samples with g = 0."""
    method = Method(gate="necessity", calibration=True)
    # floor below 0 and a wide noise quantile: about half of an untrained model's batch routed
    base = Training(batch_size=16, gate_floor=-1.0, gate_noise_quantile=0.45)
    plain, gate, *_ = _one_step(make_adapter, stream, method, _replace(base, 0.0))
    with_kl, gate_kl, adapter, features, batch = _one_step(
        make_adapter, stream, method, _replace(base, 1.0)
    )
    assert torch.equal(gate, gate_kl) and 0 < int(gate.sum()) < len(gate)
    calibration = {id(p) for p in adapter.calibration_parameters()}
    names = {name: id(p) in calibration for name, p in adapter.named_parameters()}
    for name, grad in plain.items():
        if not names[name]:
            assert torch.equal(grad, with_kl[name]), name
    # the independent ∇_φ KL, on a fresh adapter of the same seed, weights 1 − g
    fresh = _perturbed(make_adapter)
    n = len(batch)
    image = features[batch.image]
    logits = fresh(
        batch.input_ids.repeat(2, 1),
        batch.attention_mask.repeat(2, 1),
        torch.cat([image, shifted(image)]),
        calibrate=True,
    )
    kl = calibration_kl(logits[:n], logits[n:], batch.labels, 1.0 - gate)
    expected = torch.autograd.grad(kl, fresh.calibration_parameters())
    calibration_names = [name for name in plain if names[name]]
    assert calibration_names
    for name, want in zip(calibration_names, expected, strict=True):
        assert not torch.equal(plain[name], with_kl[name]), name
        torch.testing.assert_close(with_kl[name] - plain[name], want, rtol=1e-4, atol=1e-9)


def _replace(training: Training, weight: float) -> Training:
    return replace(training, calibration_weight=weight)


def test_samples_routed_to_the_projector_give_the_invariance_loss_nothing(make_adapter, stream):
    """Random gate at rate 1: every g = 1, so μ changes no gradient and φ gets none (φ is
    perturbed, so it would get one from any sample with g = 0)."""
    method = Method(gate="random", calibration=True)
    one, gate, *_ = _one_step(make_adapter, stream, method, _replace(TRAINING, 1.0))
    two, _, adapter, *_ = _one_step(make_adapter, stream, method, _replace(TRAINING, 5.0))
    assert torch.equal(gate, torch.ones(16))
    for name in one:
        assert torch.equal(one[name], two[name]), name
    calibration = {id(p) for p in adapter.calibration_parameters()}
    for name, p in adapter.named_parameters():
        if id(p) in calibration:
            assert not one[name].any(), name


# --- reduction (A7.4) and determinism ---------------------------------------------------------


def test_gate_all_without_invariance_loss_is_bit_identical_to_seqft(make_adapter, stream):
    seqft = make_adapter(0)
    gated = make_adapter(0)
    _assert_same_state(_state(seqft), _state(gated))
    calibration_at_init = [p.detach().clone() for p in gated.calibration_parameters()]
    plain = _run(seqft, stream, Method())
    reduced = _run(
        gated,
        stream,
        Method(gate="all", calibration=True),
        _replace(TRAINING, 0.0),
    )
    _assert_same_result(plain, reduced)
    _assert_same_state(_state(seqft), _state(gated))
    for before, after in zip(calibration_at_init, gated.calibration_parameters(), strict=True):
        assert torch.equal(before, after)  # routed no sample, so it stayed at s = 1
    assert not torch.equal(
        plain.projectors[0]["linear_1.weight"],
        _state(make_adapter(0))["model.model.multi_modal_projector.linear_1.weight"],
    )  # the runs did train


def test_run_stream_is_deterministic_per_seed(make_adapter, stream):
    method = Method(gate="necessity", calibration=True)
    one, two = make_adapter(0), make_adapter(0)
    first, second = _run(one, stream, method, seed=3), _run(two, stream, method, seed=3)
    _assert_same_result(first, second)
    _assert_same_state(_state(one), _state(two))
    other = _run(make_adapter(0), stream, method, seed=4)
    assert other.train_loss != first.train_loss  # another seed, another batch order
    assert first.tasks == ["where", "plus"] and len(first.correct) == 2
    assert [len(row) for row in first.correct] == [2, 2]
    assert [len(a) for a in first.correct[-1]] == [len(t.test) for t in stream.tasks]


# --- the loop's other contracts ---------------------------------------------------------------


def test_methods_and_runs_refuse_bad_settings(make_adapter, stream):
    with pytest.raises(ValueError, match="gate 'sometimes' is not one of"):
        Method(gate="sometimes")
    with pytest.raises(ValueError, match="a frozen visual path has nothing to gate"):
        Method(gate="necessity", freeze_visual=True)
    adapter = make_adapter(0)
    features = adapter.tower_features(stream.images.pixels())
    random = Method(gate="random")
    with pytest.raises(ValueError, match=r"the random gate needs one routing rate per task \(2\)"):
        run_stream(adapter, features, stream.tasks, EPOCHS, random, TRAINING, 0)
    with pytest.raises(ValueError, match=r"needs one routing rate per task"):
        run_stream(adapter, features, stream.tasks, EPOCHS, random, TRAINING, 0, random_rates=[1])
    with pytest.raises(ValueError, match="1 epoch counts for 2 tasks"):
        run_stream(adapter, features, stream.tasks, [1], Method(), TRAINING, 0)


def test_the_random_gate_routes_at_the_given_rate_per_task(make_adapter, stream):
    result = _run(make_adapter(0), stream, Method(gate="random"), random_rates=[1.0, 0.0])
    where, plus = result.routing
    assert where == {"rate": 1.0, "precision": 1.0, "recall": 1.0}
    assert plus["rate"] == 0.0 and np.isnan(plus["precision"]) and np.isnan(plus["recall"])
    # routing nothing, the second task leaves the projector exactly as the first left it
    _assert_same_state(result.projectors[0], result.projectors[1])
    assert not torch.equal(
        result.others[0]["model.lm_head.weight"], result.others[1]["model.lm_head.weight"]
    )


def test_gate_all_records_no_routing_and_freeze_visual_keeps_the_projector(make_adapter, stream):
    adapter = make_adapter(0)
    initial = _state(adapter.model.model.multi_modal_projector)
    result = _run(adapter, stream, Method(freeze_visual=True))
    assert all(np.isnan(r["rate"]) for r in result.routing)
    for snapshot in result.projectors:
        _assert_same_state(initial, snapshot)
    assert not all(p.requires_grad for p in adapter.visual_parameters())


def test_ewc_acts_only_after_the_first_consolidation(make_adapter, stream):
    """Strength 0 against 10 (same batches): equal through task 0, apart after task 1."""
    runs = []
    for strength in (0.0, 10.0):
        adapter = make_adapter(0)
        features = adapter.tower_features(stream.images.pixels())
        training = Training(batch_size=16, eval_batch_size=32, ewc_strength=strength)
        method = Method(ewc=True)
        runs.append(run_stream(adapter, features, stream.tasks, [1, 3], method, training, 0))
    weak, strong = runs
    _assert_same_state(weak.others[0], strong.others[0])
    _assert_same_state(weak.projectors[0], strong.projectors[0])
    assert weak.train_loss[1] != strong.train_loss[1]


def test_evaluate_ranks_among_choices_or_falls_back_to_exact_match(make_adapter, stream):
    adapter = make_adapter(0)
    features = adapter.tower_features(stream.images.pixels())
    task = stream.tasks[0]
    ranked, exact = evaluate(adapter, features, task.test, task.choices, False, 5)
    assert ranked.dtype == bool and ranked.shape == exact.shape == (len(task.test),)
    whole, _ = evaluate(adapter, features, task.test, task.choices, False, 64)
    np.testing.assert_array_equal(ranked, whole)  # batching does not change the scores
    fallback, exact_again = evaluate(adapter, features, task.test, None, False, 64)
    np.testing.assert_array_equal(fallback, exact_again)
    np.testing.assert_array_equal(exact, exact_again)


def test_evaluate_scores_greedy_answers_by_the_tasks_metric(make_adapter, stream):
    adapter = make_adapter(0)
    features = adapter.tower_features(stream.images.pixels())
    task = stream.tasks[0]
    scorer = AnswerScorer("vqa_accuracy", stream.tokenizer, 2)
    scores, exact = evaluate(adapter, features, task.test, task.choices, False, 5, scorer)
    answers = greedy_answers(adapter, features, task.test, stream.tokenizer, False, 5, 2)
    references = task.test.references
    expected = [vqa_accuracy(a, refs) for a, refs in zip(answers, references, strict=True)]
    np.testing.assert_array_equal(scores, expected)
    _, exact_ranked = evaluate(adapter, features, task.test, task.choices, False, 5)
    np.testing.assert_array_equal(exact, exact_ranked)  # exact match is kept as before


def test_swap_accuracy_scores_the_swapped_paths_and_restores_the_final_model(make_adapter, stream):
    adapter = make_adapter(0)
    result = _run(adapter, stream, Method())
    final = _state(adapter)
    features = adapter.tower_features(stream.images.pixels())
    out = swap_accuracy(adapter, features, stream.tasks, result, False, 32)
    _assert_same_state(final, _state(adapter))
    assert set(out) == {"final_projector", "old_projector"}
    assert len(out["final_projector"]) == len(out["old_projector"]) == 1
    # final_projector for task 0: the rest of the model as after task 0, the last projector
    check = make_adapter(0)
    check.load_state_dict(result.others[0], strict=False)
    check.model.model.multi_modal_projector.load_state_dict(result.projectors[1])
    task = stream.tasks[0]
    rows = torch.nonzero(task.test.visual_needed).flatten()
    ranked, _ = evaluate(check, features, task.test.take(rows), task.choices, False, 32)
    assert out["final_projector"][0] == float(ranked.mean())
    assert 0.0 <= out["old_projector"][0] <= 1.0


def test_swap_accuracy_is_nan_for_a_task_without_visual_items(make_adapter, stream):
    adapter = make_adapter(0)
    tasks = stream.tasks[::-1]  # the text-only task first
    features = adapter.tower_features(stream.images.pixels())
    result = run_stream(adapter, features, tasks, EPOCHS, Method(), TRAINING, 0)
    out = swap_accuracy(adapter, features, tasks, result, False, 32)
    assert np.isnan(out["final_projector"][0]) and np.isnan(out["old_projector"][0])
