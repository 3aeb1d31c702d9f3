"""Correctness of the feedback rules: exactness, starting points, isolation, alignment."""

from __future__ import annotations

import copy

import pytest
import torch
from torch import nn

from reprolab.studies.ndfa.feedback import METHODS, LearnedFeedback, build_feedback
from reprolab.studies.ndfa.models import BlockNet, build_network
from reprolab.studies.ndfa.train import method_alignment, output_error, step, true_hidden_grads

MLP = {"arch": "mlp", "hidden": [12, 9, 7], "activation": "tanh"}
SURROGATE = {"width": 8, "lr": 1e-3, "target": "softmax", "jvp_weight": 0.0, "skip": True}


class FrozenDownstream(nn.Module):
    """g_l = a frozen copy of the true network after block l."""

    def __init__(self, net: BlockNet, layer: int) -> None:
        super().__init__()
        self.net, self.layer = net, layer

    def forward(self, h: torch.Tensor) -> torch.Tensor:
        return self.net.downstream(self.layer, h)


def _setup(dtype=torch.float32, n_classes: int = 5):
    torch.manual_seed(0)
    net = build_network(MLP, (6,), n_classes).to(dtype)
    x = torch.randn(11, 6, dtype=dtype)
    y = torch.randint(0, n_classes, (11,))
    return net, x, y


def _shapes(net: BlockNet, x: torch.Tensor) -> list[tuple[int, ...]]:
    return [tuple(h.shape[1:]) for h in net.hidden(x, detach_inputs=False)]


def _feedback(method: str, net: BlockNet, x: torch.Tensor, n_classes: int = 5):
    gen = torch.Generator().manual_seed(3)
    return build_feedback(method, _shapes(net, x), n_classes, SURROGATE, gen)


def test_ndfa_with_true_downstream_surrogate_equals_bp_gradient():
    net, x, y = _setup(torch.float64)
    frozen = copy.deepcopy(net).requires_grad_(False)
    surrogates = [FrozenDownstream(frozen, i) for i in range(len(net.blocks))]
    fb = LearnedFeedback(surrogates, SURROGATE, torch.Generator().manual_seed(0))
    grads, logits = true_hidden_grads(net, x, y)
    deltas = fb.feedback(net.hidden(x, detach_inputs=True), output_error(logits, y))
    for d, g in zip(deltas, grads, strict=True):
        torch.testing.assert_close(d, g, atol=1e-6, rtol=0)


def test_learned_linear_started_at_b_equals_dfa_at_step_zero():
    net, x, y = _setup()
    hs = net.hidden(x, detach_inputs=True)
    e = output_error(net.head(hs[-1]), y)
    dfa = _feedback("dfa", net, x).feedback(hs, e)
    for method in ("linfa", "ndfa"):  # ndfa's skip starts at B with a zero nonlinear branch
        learned = _feedback(method, net, x).feedback(hs, e)
        for a, b in zip(learned, dfa, strict=True):
            torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)


def test_output_layer_gradient_identical_across_methods():
    net, x, y = _setup()
    head_grads = []
    for method in METHODS:
        model = copy.deepcopy(net)
        step(model, _feedback(method, model, x), x, y)
        head_grads.append((model.head.weight.grad.clone(), model.head.bias.grad.clone()))
    for w, b in head_grads[1:]:
        assert torch.equal(w, head_grads[0][0]) and torch.equal(b, head_grads[0][1])


def test_alignment_is_one_for_bp_against_itself():
    net, x, y = _setup()
    assert method_alignment(net, None, x, y) == pytest.approx([1.0] * 3, abs=1e-12)


@pytest.mark.parametrize("method", ["linfa", "ndfa"])
def test_surrogate_vjp_leaves_main_network_untouched(method):
    net, x, y = _setup()
    fb = _feedback(method, net, x)
    hs = net.hidden(x, detach_inputs=False)  # attached on purpose: nothing may flow back
    logits = net.head(hs[-1])
    deltas = fb.learn_and_feedback(hs, logits, output_error(logits, y), net)
    assert all(p.grad is None for p in net.parameters())
    assert all(not d.requires_grad and d.grad_fn is None for d in deltas)
    assert all(p.grad is not None for p in fb.parameters())


def test_jvp_term_trains_surrogate_only():
    net, x, y = _setup()
    fb = _feedback("ndfa", net, x)
    fb.jvp_weight = 1.0
    hs = net.hidden(x, detach_inputs=True)
    logits = net.head(hs[-1].detach())
    fb.learn_and_feedback(hs, logits, output_error(logits, y), net)
    assert all(p.grad is None for p in net.parameters())
    assert all(p.grad is not None for p in fb.parameters())


def test_non_bp_update_is_block_local():
    net, x, y = _setup()
    fb = _feedback("dfa", net, x)
    step(net, fb, x, y)
    # block 0's gradient equals the local backward of its injected feedback alone
    h0 = net.blocks[0](x)
    hs = net.hidden(x, detach_inputs=True)
    delta0 = fb.feedback(hs, output_error(net.head(hs[-1]), y))[0]
    (w_grad,) = torch.autograd.grad(h0, net.blocks[0][1].weight, delta0)
    torch.testing.assert_close(net.blocks[0][1].weight.grad, w_grad)
