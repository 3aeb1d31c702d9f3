"""Grounding targets of the three grounding methods and the KL loss."""

from __future__ import annotations

import pytest
import torch

from reprolab.studies.ssg.grounding import grounding, grounding_kl

PARAMS = {"eps": 0.05, "rho": 0.5, "iterations": 30}


def _bag() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    supports = torch.rand(32, 6, generator=gen) + 1.0
    h = torch.cat([supports[:3] + 0.01, torch.rand(3, 6, generator=gen) * 0.2 - 3.0])[None]
    return h, torch.ones(1, 6, dtype=torch.bool), supports


def test_uot_grounds_matched_instances_balanced_ot_does_not_discriminate():
    h, mask, supports = _bag()
    g = grounding("ssg_uot", h, mask, supports, PARAMS)[0]
    assert g[:3].min() > 0.5 and g[3:].max() < 0.05
    balanced = grounding("balanced_ot", h, mask, supports, PARAMS)[0]
    assert torch.allclose(balanced, torch.ones(6), atol=1e-3)  # ρ = ∞ keeps all mass
    nn = grounding("nn_grounding", h, mask, supports, PARAMS)[0]
    assert nn[:3].min() > nn[3:].max()
    with pytest.raises(ValueError, match="unknown method"):
        grounding("abmil", h, mask, supports, PARAMS)


def test_grounding_kl_is_zero_at_the_target_and_positive_elsewhere():
    g = torch.tensor([[2.0, 1.0, 1.0, 0.0]])
    mask = torch.tensor([[True, True, True, False]])
    target = torch.tensor([[0.5, 0.25, 0.25, 0.0]])
    assert grounding_kl(g, target, mask).item() == pytest.approx(0.0, abs=1e-6)
    uniform = torch.tensor([[1 / 3, 1 / 3, 1 / 3, 0.0]], requires_grad=True)
    loss = grounding_kl(g, uniform, mask)
    loss.backward()
    assert loss.item() > 0 and torch.isfinite(uniform.grad).all()
    assert grounding_kl(torch.zeros(1, 4), target, mask).item() == 0.0
