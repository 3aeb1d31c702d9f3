"""The regularised baselines' penalties: zero where nothing changed, positive where it did."""

from __future__ import annotations

import torch
from transformers import ViTModel

from reprolab.studies.trpr.adapters import FrozenViT, plain_routing
from reprolab.studies.trpr.backbone import vit_config
from reprolab.studies.trpr.penalties import EWC, FeatureDistillation, RouterKL


def model() -> FrozenViT:
    torch.manual_seed(0)
    backbone = ViTModel(
        vit_config({"hidden": 16, "layers": 2, "heads": 2}), add_pooling_layer=False
    )
    frozen = FrozenViT(backbone, first_adapted=0, experts=3, rank=2, temperature=1.0)
    with torch.no_grad():
        for adapter in frozen.adapters:
            adapter.up.normal_(0.0, 0.1)
    return frozen


def stem(frozen: FrozenViT) -> torch.Tensor:
    return frozen.stem(torch.rand(6, 1, 16, 16, generator=torch.Generator().manual_seed(1)))


def test_router_kl_and_feature_distillation_are_zero_until_the_adapters_move():
    frozen = model()
    hidden = stem(frozen)
    penalties = [RouterKL(frozen), FeatureDistillation(frozen)]
    routed = frozen.head(hidden, plain_routing)
    assert all(abs(float(penalty(routed, hidden).detach())) < 1e-6 for penalty in penalties)
    with torch.no_grad():
        frozen.adapters[0].router.bias[0] += 1.0
    moved = frozen.head(hidden, plain_routing)
    assert all(float(penalty(moved, hidden).detach()) > 1e-5 for penalty in penalties)


def test_ewc_is_zero_at_its_anchor_and_grows_away_from_it():
    frozen = model()
    hidden = stem(frozen)
    parameters = list(frozen.adapters.parameters())
    ewc = EWC()
    assert float(ewc(parameters).detach()) == 0.0
    ewc.consolidate(parameters, [lambda: frozen.head(hidden, plain_routing).features.pow(2).sum()])
    assert float(ewc(parameters).detach()) == 0.0 and any(f.sum() > 0 for f in ewc.fisher)
    with torch.no_grad():
        parameters[0].add_(0.1)
    assert float(ewc(parameters).detach()) > 0.0
    first = [f.clone() for f in ewc.fisher]
    ewc.consolidate(parameters, [lambda: frozen.head(hidden, plain_routing).features.sum()])
    assert all(torch.all(after >= before) for after, before in zip(ewc.fisher, first, strict=True))
