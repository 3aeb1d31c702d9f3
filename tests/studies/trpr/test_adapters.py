"""MoE adapters on a tiny `transformers` ViT: exact when untrained, routed per image, mixing
linearly, with a gate that starts trusting the projected path."""

from __future__ import annotations

import pytest
import torch
from transformers import ViTModel

from reprolab.studies.trpr.adapters import FrozenViT, FusionGate, MoEAdapter, plain_routing
from reprolab.studies.trpr.backbone import vit_config


def tiny_vit(seed: int = 0) -> ViTModel:
    torch.manual_seed(seed)
    config = vit_config({"hidden": 32, "layers": 3, "heads": 2})
    return ViTModel(config, add_pooling_layer=False).eval()


def images(batch: int = 4) -> torch.Tensor:
    return torch.randn(batch, 1, 16, 16, generator=torch.Generator().manual_seed(1))


def test_untrained_adapters_reproduce_the_frozen_backbone_exactly():
    backbone = tiny_vit()
    pixels = images()
    reference = backbone(pixel_values=pixels).last_hidden_state[:, 0]
    model = FrozenViT(backbone, first_adapted=1, experts=3, rank=4, temperature=1.0)
    routed = model.head(model.stem(pixels), plain_routing)
    assert torch.equal(routed.features, reference)
    assert routed.router.shape == routed.weights.shape == (2, 4, 3)
    uniform = torch.full_like(routed.weights, 1 / 3)  # a zero router routes uniformly
    assert torch.allclose(routed.router.exp(), uniform) and torch.allclose(routed.weights, uniform)


def test_only_the_adapters_train_and_the_stem_is_constant():
    model = FrozenViT(tiny_vit(), first_adapted=2, experts=2, rank=2, temperature=1.0)
    trained = {name for name, p in model.named_parameters() if p.requires_grad}
    assert trained and all(name.startswith("adapters.") for name in trained)
    assert not model.stem(images()).requires_grad
    with pytest.raises(ValueError, match="blocks 0..2"):
        FrozenViT(tiny_vit(), first_adapted=3, experts=2, rank=2, temperature=1.0)


def test_an_adapter_mixes_its_experts_linearly_in_the_weights():
    adapter = MoEAdapter(dim=8, experts=3, rank=2)
    torch.nn.init.normal_(adapter.up, generator=torch.Generator().manual_seed(2))
    hidden = torch.randn(5, 6, 8, generator=torch.Generator().manual_seed(3))
    p = torch.softmax(torch.randn(5, 3, generator=torch.Generator().manual_seed(4)), -1)
    q = torch.softmax(torch.randn(5, 3, generator=torch.Generator().manual_seed(5)), -1)
    gamma = torch.rand(5, 1, generator=torch.Generator().manual_seed(6))
    fused = adapter(hidden, gamma * p + (1 - gamma) * q)
    outputs = gamma[..., None] * adapter(hidden, p) + (1 - gamma[..., None]) * adapter(hidden, q)
    assert torch.allclose(fused, outputs, atol=1e-6)
    one_hot = torch.eye(3)[[0, 1, 2, 0, 1]]
    single = adapter(hidden, one_hot)
    assert torch.allclose(single[0], adapter(hidden[:1], torch.eye(3)[:1])[0], atol=1e-6)
    assert single.shape == hidden.shape


def test_the_gate_starts_at_its_bias_and_has_one_value_per_image():
    gate = FusionGate(dim=8, bias=-2.0)
    values = gate(torch.randn(7, 8))
    assert values.shape == (7,)
    assert torch.allclose(values, torch.sigmoid(torch.tensor(-2.0)).expand(7))
