"""Permutations: y[:, k] = x[:, order[k]], undone by the inverse, log-determinant 0, the
context ignored; a seeded order depends on the seed alone."""

from __future__ import annotations

import pytest
import torch

from reprolab.models.flows.permutation import Permutation, Reverse
from tests.models.flows.checks import assert_round_trip, autograd_log_det

pytestmark = pytest.mark.usefixtures("torch_one_thread")


def test_a_permutation_reorders_and_is_undone():
    layer = Permutation([2, 0, 3, 1])
    x = torch.arange(8.0).view(2, 4)
    y, log_det = layer(x, torch.ones(2, 5))
    assert torch.equal(y, torch.tensor([[2.0, 0.0, 3.0, 1.0], [6.0, 4.0, 7.0, 5.0]]))
    assert torch.equal(log_det, torch.zeros(2))
    assert_round_trip(layer, x, None, atol=0)
    x64 = x.double()
    assert torch.equal(autograd_log_det(layer, x64, None), torch.zeros(2, dtype=torch.float64))


def test_reverse_is_its_own_inverse():
    layer = Reverse(3)
    x = torch.tensor([[1.0, 2.0, 3.0]])
    assert torch.equal(layer(x)[0], torch.tensor([[3.0, 2.0, 1.0]]))
    assert torch.equal(layer.inverse(x)[0], layer(x)[0])


def test_a_seeded_order_depends_on_the_seed_alone():
    state = torch.random.get_rng_state()
    first = Permutation.from_seed(12, seed=3).order
    assert torch.equal(torch.random.get_rng_state(), state)
    torch.manual_seed(99)
    assert torch.equal(Permutation.from_seed(12, seed=3).order, first)
    assert not torch.equal(Permutation.from_seed(12, seed=4).order, first)
    assert sorted(first.tolist()) == list(range(12))


def test_the_order_is_saved_with_the_model():
    assert set(Permutation.from_seed(4, seed=1).state_dict()) == {"order", "undo"}


def test_a_bad_order_is_refused():
    with pytest.raises(ValueError, match="permutation of range\\(3\\)"):
        Permutation([0, 2, 2])
