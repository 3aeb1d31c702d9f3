"""AdaptedVideoModel: starts as the frozen backbone, frame-order blindness of spatial-only
placements, parameter counts against the closed forms, hooks and head."""

from __future__ import annotations

import pytest
import torch

from reprolab.studies.strap.adapters import (
    SpatialAdapter,
    TemporalAdapter,
    placement,
    placement_parameters,
)
from reprolab.studies.strap.backbone import blocks
from reprolab.studies.strap.model import AdaptedVideoModel
from reprolab.studies.strap.sensitivity import block_tokens
from reprolab.studies.strap.workflow_io import ROWS

from .conftest import BOTTLENECK, TOKENS, WIDTH, random_clips, tiny_vit

pytestmark = pytest.mark.usefixtures("torch_one_thread")

LAYERS = 3


def _model(backbone, plan, pool="tokens", seed=0, classes=3) -> AdaptedVideoModel:
    torch.manual_seed(seed)
    return AdaptedVideoModel(backbone, plan, BOTTLENECK, classes, pool, conv_std=0.5).eval()


def _perturb(model: AdaptedVideoModel, seed: int = 1) -> None:
    """Random W_up (and temporal convolutions), as training would leave them."""
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for adapters in model.adapters:
            for adapter in adapters:
                for weight in (adapter.up.weight, adapter.up.bias):
                    weight.copy_(torch.randn(weight.shape, generator=generator))
                if isinstance(adapter, TemporalAdapter):
                    conv = adapter.conv.weight
                    conv.copy_(torch.randn(conv.shape, generator=generator))


def _hooks(backbone) -> int:
    return sum(len(layer._forward_hooks) for layer in blocks(backbone))


@pytest.fixture
def backbone():
    """A fresh tiny ViT per test: the models hook into it."""
    return tiny_vit(LAYERS)


@pytest.mark.parametrize("row", ROWS)
def test_a_new_model_computes_the_frozen_backbones_features(backbone, row):
    clips = random_clips(2, 4, seed=0)
    probe = _model(backbone, placement("probe", LAYERS))
    expected = probe.features(clips)
    probe.remove_hooks()
    model = _model(backbone, placement(row, LAYERS, 1))
    assert torch.equal(model.features(clips), expected)
    model.remove_hooks()


def test_spatial_only_model_is_blind_to_frame_order(backbone):
    model = _model(backbone, placement("spatial_all", LAYERS))
    _perturb(model)
    clips = random_clips(2, 5, seed=0)
    permuted = clips[:, torch.tensor([3, 0, 4, 2, 1])]
    torch.testing.assert_close(model(permuted), model(clips), atol=1e-5, rtol=1e-5)
    probe = _model(tiny_vit(LAYERS), placement("probe", LAYERS))
    assert not torch.allclose(model.features(clips), probe.features(clips), atol=1e-3)


def test_spatial_only_model_permutes_per_frame_tokens_with_the_frames(backbone):
    model = _model(backbone, placement("spatial_all", LAYERS))
    _perturb(model)
    order = torch.tensor([2, 0, 3, 1])
    clips = random_clips(2, 4, seed=3)
    tokens = block_tokens(model.backbone, clips)  # the adapter hooks run first
    permuted = block_tokens(model.backbone, clips[:, order])
    for layer, moved in zip(tokens, permuted, strict=True):
        torch.testing.assert_close(moved, layer[:, order], atol=1e-5, rtol=1e-5)
    assert _hooks(model.backbone) == LAYERS  # the model's own hooks are still there


@pytest.mark.parametrize("row", ["temporal_all", "st_adapter", "aim"])
def test_temporal_model_sees_frame_order(backbone, row):
    model = _model(backbone, placement(row, LAYERS))
    _perturb(model)
    clips = random_clips(2, 5, seed=0)
    permuted = clips[:, torch.tensor([3, 0, 4, 2, 1])]
    difference = (model(permuted) - model(clips)).abs().max()
    assert difference > 1e-3


def test_strap_model_sees_frame_order(backbone):
    model = _model(backbone, placement("strap", LAYERS, 2))
    _perturb(model)
    clips = random_clips(1, 4, seed=0)
    assert (model(clips.flip(1)) - model(clips)).abs().max() > 1e-3


def test_clips_in_a_batch_are_independent(backbone):
    model = _model(backbone, placement("st_adapter", LAYERS))
    _perturb(model)
    clips = random_clips(3, 4, seed=0)
    together = model(clips)
    for index in range(3):
        alone = model(clips[index : index + 1])
        torch.testing.assert_close(together[index : index + 1], alone, atol=1e-5, rtol=1e-5)


PLACEMENTS = [
    (row, boundary)
    for row in ROWS
    for boundary in (range(LAYERS + 1) if row.startswith("strap") else [None])
]
"""Every row of the table; the STRAP rows at every boundary."""


@pytest.mark.parametrize(("row", "boundary"), PLACEMENTS)
def test_trainable_parameters_equal_the_closed_form(backbone, row, boundary):
    plan = placement(row, LAYERS, boundary)
    model = _model(backbone, plan)
    head = sum(w.numel() for w in model.head.parameters())
    assert head == (TOKENS * WIDTH + 1) * 3
    expected = placement_parameters(plan, WIDTH, BOTTLENECK)
    assert model.trainable_parameters() - head == expected
    kinds = [type(a) for adapters in model.adapters for a in adapters]
    assert kinds.count(SpatialAdapter) == sum(p.count("S") + p.count("J") for p in plan)
    assert kinds.count(TemporalAdapter) == sum(p.count("T") for p in plan)


def test_backbone_is_frozen_and_stays_in_eval_mode(backbone):
    model = _model(backbone, placement("aim", LAYERS))
    assert not any(w.requires_grad for w in model.backbone.parameters())
    model.train()
    assert model.training and model.head.training
    assert not model.backbone.training
    assert not any(m.training for m in model.backbone.modules())


def test_hooks_only_on_blocks_with_adapters_and_removed(backbone):
    model = _model(backbone, ["T", "", "S"])
    assert [len(layer._forward_hooks) for layer in blocks(backbone)] == [1, 0, 1]
    model.remove_hooks()
    assert _hooks(backbone) == 0


@pytest.mark.parametrize(("pool", "features"), [("tokens", TOKENS * WIDTH), ("cls", WIDTH)])
def test_poolings(backbone, pool, features):
    model = _model(backbone, placement("temporal_all", LAYERS), pool=pool, classes=4)
    clips = random_clips(2, 3, seed=0)
    assert model.head.in_features == features
    assert model.features(clips).shape == (2, features)
    assert model(clips).shape == (2, 4)


def test_cls_pool_is_the_time_mean_of_the_cls_token(backbone):
    model = _model(backbone, placement("probe", LAYERS), pool="cls")
    clips = random_clips(2, 3, seed=0)
    last = backbone(pixel_values=clips.flatten(0, 1)).last_hidden_state
    expected = last.view(2, 3, TOKENS, WIDTH)[:, :, 0].mean(1)
    torch.testing.assert_close(model.features(clips), expected)


def test_bad_plan_length_or_pool_is_refused(backbone):
    with pytest.raises(ValueError, match="placement has 2 entries for 3 blocks"):
        _model(backbone, ["S", "S"])
    with pytest.raises(ValueError, match="head pool 'mean'"):
        _model(backbone, ["S"] * 3, pool="mean")


def test_gradients_reach_adapters_and_head_only(backbone):
    model = _model(backbone, placement("strap", LAYERS, 1))
    _perturb(model)
    model.train()
    model(random_clips(2, 3, seed=0)).sum().backward()
    assert all(w.grad is None for w in model.backbone.parameters())
    trainable = [w for w in model.parameters() if w.requires_grad]
    assert all(w.grad is not None and w.grad.abs().sum() > 0 for w in trainable)
