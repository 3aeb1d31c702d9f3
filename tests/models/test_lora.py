"""LoRA on a tiny LLaVA's language model: exact at initialisation, seeded, only adapters train."""

from __future__ import annotations

import dataclasses

import pytest
import torch

from reprolab.core.params import load_schema
from reprolab.models.lora import LoRA, add_lora
from reprolab.models.tiny_vlm import build_tiny_llava, build_tokenizer

LORA = LoRA(rank=2, alpha=4.0, targets=("q_proj", "v_proj"))


def _model(seed: int = 0):
    model, _ = build_tiny_llava(build_tokenizer(["cat"]), seed, 8, 4, hidden=16, layers=2, heads=2)
    return model


def _logits(model, ids):
    return model(input_ids=ids, attention_mask=torch.ones_like(ids)).logits


def test_adapters_start_as_the_identity_and_are_the_only_trainable_language_weights():
    model = _model()
    ids = torch.tensor([[1, 6, 7, 8, 9]])
    before = _logits(model, ids)
    adapters = add_lora(model.model.language_model, LORA, seed=3)
    assert len(adapters) == 2 * 2 * 2  # A and B, two targets, two layers
    assert torch.equal(_logits(model, ids), before)
    trainable = {n for n, p in model.model.language_model.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in n for n in trainable)
    # the projector and the head are outside the adapted module and keep their trainability
    assert all(p.requires_grad for p in model.model.multi_modal_projector.parameters())


def test_a_step_changes_the_adapters_only_and_one_seed_gives_one_init():
    model = _model()
    adapters = add_lora(model.model.language_model, LORA, seed=3)
    twin = _model()
    twin_adapters = add_lora(twin.model.language_model, LORA, seed=3)
    assert all(torch.equal(a, b) for a, b in zip(adapters, twin_adapters, strict=True))
    other = add_lora(_model().model.language_model, LORA, seed=4)
    assert not torch.equal(adapters[0], other[0])
    base = {
        n: p.detach().clone()
        for n, p in model.model.language_model.named_parameters()
        if "lora_" not in n
    }
    optimizer = torch.optim.SGD(adapters, lr=0.1)
    ids = torch.tensor([[1, 6, 7, 8, 9]])
    _logits(model, ids).logsumexp(-1).mean().backward()
    optimizer.step()
    after = dict(model.model.language_model.named_parameters())
    assert all(torch.equal(value, after[n]) for n, value in base.items())
    lora_b = [p for n, p in model.model.language_model.named_parameters() if "lora_B" in n]
    assert any(p.abs().sum() > 0 for p in lora_b)


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="rank must be >= 0"):
        LoRA(rank=-1)
    with pytest.raises(ValueError, match="dropout must be in"):
        LoRA(rank=2, dropout=1.0)
    with pytest.raises(ValueError, match=r"lora targets \['wq'\] match no module"):
        add_lora(_model().model.language_model, LoRA(rank=2, targets=("wq",)), seed=0)


def test_the_params_definition_lists_the_fields_of_lora():
    """Jobs build `LoRA(**params[...]['lora'])` (vngct, hiccr): the shared schema definition's
    keys must be its fields."""
    spec = load_schema("defs.schema.yaml")["$defs"]["lora"]
    assert sorted(spec["properties"]) == sorted(f.name for f in dataclasses.fields(LoRA))
