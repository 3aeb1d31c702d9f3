"""MLLMAdapter: parameter paths, the calibration scale at init, and gradient routing (card A7.1)."""

from __future__ import annotations

import pytest
import torch

from reprolab.studies.vngct.adapter import CalibrationScale, GateSlot, route
from reprolab.studies.vngct.tensors import answer_loss

pytestmark = pytest.mark.usefixtures("torch_one_thread")


def _batch(stream):
    """Two samples of different tasks and lengths (a position and an arith question)."""
    where, plus = stream.tasks[0].train, stream.tasks[1].train
    assert where.input_ids.shape[1] != plus.input_ids.shape[1]
    return where.take(torch.tensor([0])), plus.take(torch.tensor([0]))


def _pad_pair(stream):
    """One batch holding the two samples of `_batch`, right-padded like `encode_samples`."""
    first, second = _batch(stream)
    length = max(first.input_ids.shape[1], second.input_ids.shape[1])

    def pad(tensor, value):
        return torch.nn.functional.pad(tensor, (0, length - tensor.shape[1]), value=value)

    pad_id = stream.tokenizer.pad_token_id
    ids = torch.cat([pad(first.input_ids, pad_id), pad(second.input_ids, pad_id)])
    mask = torch.cat([pad(first.attention_mask, 0), pad(second.attention_mask, 0)])
    labels = torch.cat([pad(first.labels, -100), pad(second.labels, -100)])
    return ids, mask, labels, torch.cat([first.image, second.image])


def _perturb_calibration(adapter, seed: int = 0) -> None:
    """Random calibration weights (the zero-initialised last layer would hide the first's grad)."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in adapter.calibration_parameters():
            parameter.copy_(torch.randn(parameter.shape, generator=generator) * 0.5)


def test_parameter_paths_are_disjoint_and_cover_every_trainable_parameter(make_adapter):
    adapter = make_adapter(0)
    paths = [
        adapter.language_parameters(),
        adapter.visual_parameters(),
        adapter.calibration_parameters(),
    ]
    ids = [{id(p) for p in path} for path in paths]
    assert all(ids) and not (ids[0] & ids[1] or ids[0] & ids[2] or ids[1] & ids[2])
    trainable = {id(p) for p in adapter.parameters() if p.requires_grad}
    assert trainable == ids[0] | ids[1] | ids[2]
    tower = list(adapter.model.model.vision_tower.parameters())
    assert tower and not any(p.requires_grad for p in tower)
    lm_head = {id(p) for p in adapter.model.lm_head.parameters()}
    assert lm_head <= ids[0]


def test_tower_features_drop_the_cls_token(make_adapter, stream):
    adapter = make_adapter(0)
    features = adapter.tower_features(stream.images.pixels()[:3])
    assert features.shape == (3, 16, 32) and not features.requires_grad


def test_calibration_scale_is_exactly_one_at_init():
    scale = CalibrationScale(hidden=32, width=8)
    question = torch.randn(5, 32, generator=torch.Generator().manual_seed(0)) * 10
    out = scale(question)
    assert out.shape == (5, 1, 1) and torch.equal(out, torch.ones(5, 1, 1))


def test_calibrating_an_untrained_adapter_changes_nothing(make_adapter, stream):
    adapter = make_adapter(0)
    ids, mask, _, image = _pad_pair(stream)
    features = adapter.tower_features(stream.images.pixels())[image]
    with torch.no_grad():
        plain = adapter(ids, mask, features)
        calibrated = adapter(ids, mask, features, calibrate=True)
    assert torch.equal(plain, calibrated)
    _perturb_calibration(adapter)
    with torch.no_grad():
        assert not torch.equal(plain, adapter(ids, mask, features, calibrate=True))


def test_route_scales_each_samples_gradient_by_its_gate():
    values = torch.arange(6.0).reshape(2, 3).requires_grad_()
    slot = GateSlot()
    out = route(values, slot)
    inverted = route(values, slot, invert=True)
    assert torch.equal(out, values) and torch.equal(inverted, values)
    slot.gate = torch.tensor([0.25, 1.0])
    (grad,) = torch.autograd.grad((out * 2).sum(), values, retain_graph=True)
    assert torch.equal(grad, torch.tensor([[0.5] * 3, [2.0] * 3]))
    (grad,) = torch.autograd.grad((inverted * 2).sum(), values)
    assert torch.equal(grad, torch.tensor([[1.5] * 3, [0.0] * 3]))


def test_gradient_routing_with_the_gate_set_after_the_forward(make_adapter, stream):
    """Gate [1, 0]: θ_V learns from sample 0 only, φ from sample 1 only, θ_L from both.

    L_main is the batch mean, so sample i's share of its gradient is ∇(ℓ_i / B), B = 2.
    """
    adapter = make_adapter(0)
    _perturb_calibration(adapter)
    ids, mask, labels, image = _pad_pair(stream)
    features = adapter.tower_features(stream.images.pixels())[image]
    visual, language = adapter.visual_parameters(), adapter.language_parameters()
    calibration = adapter.calibration_parameters()

    slot = GateSlot()
    routed_logits = adapter(ids, mask, features, calibrate=True, routing=slot)
    slot.gate = torch.tensor([1.0, 0.0])  # set after the forward, before the backward
    adapter.zero_grad(set_to_none=True)
    answer_loss(routed_logits, labels).mean().backward()
    routed = {
        "visual": [p.grad.clone() for p in visual],
        "language": [p.grad.clone() for p in language],
        "calibration": [p.grad.clone() for p in calibration],
    }

    logits = adapter(ids, mask, features, calibrate=True)
    assert torch.equal(routed_logits, logits)  # routing never changes forward values
    losses = answer_loss(logits, labels)
    every = visual + language + calibration
    full = torch.autograd.grad(losses.mean(), every, retain_graph=True)
    full_visual = full[: len(visual)]
    full_language = full[len(visual) : len(visual) + len(language)]
    full_calibration = full[len(visual) + len(language) :]
    only_0 = torch.autograd.grad(losses[0] / 2, visual, retain_graph=True)
    only_1 = torch.autograd.grad(losses[1] / 2, calibration)

    for got, want in zip(routed["language"], full_language, strict=True):
        assert torch.equal(got, want)
    for got, want in zip(routed["visual"], only_0, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-8)
    for got, want in zip(routed["calibration"], only_1, strict=True):
        torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-8)
    # ... and the routed gradients are not the unrouted ones (both samples count there)
    assert not torch.allclose(routed["visual"][0], full_visual[0], rtol=1e-3, atol=1e-6)
    assert not torch.allclose(routed["calibration"][0], full_calibration[0], rtol=1e-3, atol=1e-6)


def test_backward_without_a_gate_is_refused(make_adapter, stream):
    adapter = make_adapter(0)
    ids, mask, labels, image = _pad_pair(stream)
    features = adapter.tower_features(stream.images.pixels())[image]
    slot = GateSlot()
    loss = answer_loss(adapter(ids, mask, features, routing=slot), labels).mean()
    with pytest.raises(RuntimeError, match=r"gate slot holds None.*\(2,\) before backward"):
        loss.backward(retain_graph=True)
    slot.gate = torch.ones(3)
    with pytest.raises(RuntimeError, match=r"gate slot holds \(3,\)"):
        loss.backward()


def test_a_batch_without_matching_image_tokens_is_refused(make_adapter, stream):
    adapter = make_adapter(0)
    ids, mask, _, image = _pad_pair(stream)
    features = adapter.tower_features(stream.images.pixels())[image]
    with pytest.raises(ValueError, match=r"32 <image> token positions for 1 images × 16 tokens"):
        adapter(ids, mask, features[:1])
