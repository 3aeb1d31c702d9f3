"""Gated ABMIL with instance weights: a weighted prototype stands for its copies exactly, one
prototype reduces to the linear head, and padding (with its weights) changes nothing."""

from __future__ import annotations

import torch

from reprolab.models.abmil import GatedABMIL, masked_softmax

DIM = 5


def model(seed: int = 0) -> GatedABMIL:
    torch.manual_seed(seed)
    return GatedABMIL(DIM, hidden=8, attention_dim=4, dropout=0.0).eval()


def everything(n: int) -> torch.Tensor:
    return torch.ones(1, n, dtype=torch.bool)


@torch.no_grad()
def test_weighted_unique_instances_give_the_logit_of_the_bag_with_duplicates():
    net = model()
    a, b, c = torch.randn(3, DIM, generator=torch.Generator().manual_seed(1))
    bag = torch.stack([a, a, a, b, c])[None]
    unique = torch.stack([a, b, c])[None]
    weights = torch.tensor([[3 / 5, 1 / 5, 1 / 5]])
    full = net(bag, everything(5))
    condensed = net(unique, everything(3), weights)
    assert torch.allclose(condensed.logit, full.logit, atol=1e-5)
    # The prototype of a carries the attention of its three copies.
    assert torch.allclose(condensed.attention[0, 0], full.attention[0, :3].sum(), atol=1e-6)
    assert not torch.allclose(net(unique, everything(3)).logit, full.logit, atol=1e-5)


@torch.no_grad()
def test_one_prototype_of_weight_one_is_the_linear_head_on_its_embedding():
    net = model(2)
    x = torch.randn(1, 1, DIM, generator=torch.Generator().manual_seed(3))
    out = net(x, everything(1), torch.ones(1, 1))
    assert torch.equal(out.attention, torch.ones(1, 1))
    expected = net.head(net.encoder(x)[0, 0]).squeeze(-1)
    assert torch.allclose(out.logit, expected[None], atol=1e-6)


@torch.no_grad()
def test_uniform_weights_equal_no_weights():
    net = model(4)
    x = torch.randn(2, 6, DIM, generator=torch.Generator().manual_seed(5))
    mask = torch.ones(2, 6, dtype=torch.bool)
    plain = net(x, mask)
    uniform = net(x, mask, torch.full((2, 6), 1 / 6))
    assert torch.allclose(uniform.logit, plain.logit, atol=1e-6)
    assert torch.allclose(uniform.attention, plain.attention, atol=1e-6)


@torch.no_grad()
def test_a_zero_weight_prototype_is_ignored():
    net = model(6)
    x = torch.randn(1, 4, DIM, generator=torch.Generator().manual_seed(7))
    weights = torch.tensor([[0.5, 0.3, 0.2, 0.0]])
    with_zero = net(x, everything(4), weights)
    without = net(x[:, :3], everything(3), weights[:, :3])
    assert torch.allclose(with_zero.logit, without.logit, atol=1e-5)
    assert float(with_zero.attention[0, 3]) < 1e-20


@torch.no_grad()
def test_weighted_bags_are_invariant_to_padding():
    net = model(8)
    generator = torch.Generator().manual_seed(9)
    x = torch.randn(1, 3, DIM, generator=generator)
    weights = torch.tensor([[0.6, 0.3, 0.1]])
    padded = torch.cat([x, torch.full((1, 4, DIM), 9.0)], 1)
    padded_weights = torch.cat([weights, torch.ones(1, 4)], 1)  # train.pad puts ones there
    mask = torch.tensor([[True] * 3 + [False] * 4])
    ref = net(x, everything(3), weights)
    out = net(padded, mask, padded_weights)
    assert torch.allclose(out.logit, ref.logit, atol=1e-5)
    assert torch.all(out.attention[:, 3:] == 0)
    assert torch.allclose(out.attention[:, :3], ref.attention, atol=1e-6)


@torch.no_grad()
def test_bags_of_a_batch_do_not_interact():
    net = model(10)
    generator = torch.Generator().manual_seed(11)
    x, weights = torch.randn(3, 4, DIM, generator=generator), torch.rand(3, 4, generator=generator)
    weights = weights / weights.sum(1, keepdim=True)
    batch = net(x, torch.ones(3, 4, dtype=torch.bool), weights).logit
    single = torch.cat(
        [net(x[i : i + 1], everything(4), weights[i : i + 1]).logit for i in range(3)]
    )
    assert torch.allclose(batch, single, atol=1e-6)


def test_masked_softmax_gives_padding_exactly_zero():
    p = masked_softmax(torch.tensor([[0.5, -1.0, 40.0]]), torch.tensor([[True, True, False]]))
    assert p[0, 2] == 0 and torch.isclose(p.sum(), torch.tensor(1.0))
