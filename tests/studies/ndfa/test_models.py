"""Residual-block networks: feedback shapes and one training step for every method."""

from __future__ import annotations

import torch

from reprolab.studies.ndfa.feedback import METHODS, build_feedback
from reprolab.studies.ndfa.models import build_network
from reprolab.studies.ndfa.train import step

TINY_RESNET = {"arch": "resnet", "widths": [4, 8], "blocks_per_stage": [1, 2]}
SURROGATE = {"width": 6, "lr": 1e-3, "target": "logits", "jvp_weight": 0.0, "skip": True}


def test_resnet18_layout():
    net = build_network(
        {"arch": "resnet", "widths": [64, 128, 256, 512], "blocks_per_stage": [2, 2, 2, 2]},
        (3, 32, 32),
        10,
    )
    shapes = [tuple(h.shape[1:]) for h in net.hidden(torch.zeros(1, 3, 32, 32), False)]
    assert len(net.blocks) == 8
    assert shapes[0] == (64, 32, 32) and shapes[-1] == (512, 4, 4)


def test_feedback_shapes_and_one_step_on_tiny_resnet():
    torch.manual_seed(0)
    x = torch.randn(5, 3, 8, 8)
    y = torch.randint(0, 3, (5,))
    for method in METHODS:
        net = build_network(TINY_RESNET, (3, 8, 8), 3)
        hs = net.hidden(x, detach_inputs=True)
        assert [tuple(h.shape[1:]) for h in hs] == [(4, 8, 8), (8, 4, 4), (8, 4, 4)]
        shapes = [tuple(h.shape[1:]) for h in hs]
        fb = build_feedback(method, shapes, 3, SURROGATE, torch.Generator().manual_seed(0))
        if fb is not None:
            logits = net.head(hs[-1].detach())
            e = torch.softmax(logits, 1) / len(x)
            assert [d.shape for d in fb.feedback(hs, e)] == [h.shape for h in hs]
        before = [p.detach().clone() for p in net.parameters()]
        step(net, fb, x, y)
        assert all(p.grad is not None for p in net.parameters())
        opt = torch.optim.SGD(net.parameters(), lr=0.1)
        opt.step()
        assert any(not torch.equal(a, b) for a, b in zip(before, net.parameters(), strict=True))
