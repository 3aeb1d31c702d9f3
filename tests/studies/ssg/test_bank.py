"""The support bank keeps the newest vectors per class in FIFO order and never holds gradients."""

from __future__ import annotations

import pytest
import torch

from reprolab.studies.ssg.bank import SupportBank, top_fraction


def test_fifo_order_per_class():
    bank = SupportBank(n_classes=2, capacity=4, dim=1)
    bank.push(1, torch.arange(3.0).reshape(3, 1))
    assert bank.supports(1).flatten().tolist() == [0.0, 1.0, 2.0]
    bank.push(1, torch.arange(3.0, 6.0).reshape(3, 1))
    assert bank.supports(1).flatten().tolist() == [2.0, 3.0, 4.0, 5.0]
    bank.push(1, torch.arange(6.0, 13.0).reshape(7, 1))  # more than capacity at once
    assert bank.supports(1).flatten().tolist() == [9.0, 10.0, 11.0, 12.0]
    assert bank.size(0) == 0 and bank.supports(0).shape == (0, 1)


def test_bank_holds_no_gradients():
    w = torch.ones(2, 3, requires_grad=True)
    bank = SupportBank(2, 8, 3)
    bank.push(0, w * 2.0)
    supports = bank.supports(0)
    assert not supports.requires_grad and supports.grad_fn is None
    loss = (w * 2.0).sum() + supports.sum()
    loss.backward()
    assert torch.equal(w.grad, torch.full((2, 3), 2.0))  # only the direct path has a gradient
    with pytest.raises(ValueError, match="capacity"):
        SupportBank(2, 0, 3)


def test_top_fraction_ignores_padding_and_rounds_up():
    scores = torch.tensor([[0.1, 0.9, 0.5, 5.0], [0.3, 0.2, 0.1, 0.4]])
    mask = torch.tensor([[True, True, True, False], [True, True, True, True]])
    top = top_fraction(scores, mask, 0.34)
    assert top[0].tolist() == [1, 2]  # ⌈0.34 · 3⌉ = 2, the padded 5.0 never chosen
    assert top[1].tolist() == [3, 0]
