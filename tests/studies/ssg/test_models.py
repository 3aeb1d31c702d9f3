"""Every MIL network: output shapes, padding invariance, and the CLAM instance loss."""

from __future__ import annotations

import pytest
import torch

from reprolab.models.abmil import masked_softmax
from reprolab.studies.ssg.models import METHODS, build_model
from tests.studies.ssg.specs import MODEL


@pytest.mark.parametrize("method", METHODS)
def test_outputs_and_padding_invariance(method):
    torch.manual_seed(0)
    model = build_model(method, 5, MODEL).eval()
    x = torch.randn(1, 7, 5)
    padded = torch.cat([x, torch.full((1, 3, 5), 9.0)], 1)
    mask = torch.tensor([[True] * 7 + [False] * 3])
    with torch.no_grad():
        ref = model(x, torch.ones(1, 7, dtype=torch.bool))
        out = model(padded, mask)
    assert out.logit.shape == (1,) and out.score.shape == (1, 10) and out.h.shape == (1, 10, 16)
    assert torch.allclose(out.logit, ref.logit, atol=1e-5)
    assert torch.allclose(out.score[:, :7], ref.score, atol=1e-5)
    if out.attention is not None:
        assert torch.allclose(out.attention.sum(-1), torch.ones(1), atol=1e-5)
        assert torch.all(out.attention[:, 7:] == 0)


def test_unknown_method_is_rejected():
    with pytest.raises(ValueError, match="unknown method"):
        build_model("dsmil", 5, MODEL)


def test_mean_pool_logit_is_the_mean_instance_logit_and_max_pool_the_max():
    torch.manual_seed(1)
    x, mask = torch.randn(2, 6, 5), torch.ones(2, 6, dtype=torch.bool)
    for method, reduce in (("mean_pool", torch.mean), ("max_pool", torch.amax)):
        out = build_model(method, 5, MODEL)(x, mask)
        assert torch.allclose(out.logit, reduce(out.score, -1), atol=1e-6)


def test_clam_instance_loss_trains_the_instance_head():
    torch.manual_seed(2)
    model = build_model("clam_sb", 5, MODEL)
    x, mask = torch.randn(4, 20, 5), torch.ones(4, 20, dtype=torch.bool)
    out = model(x, mask)
    loss = model.instance_loss(out, mask, torch.tensor([1.0, 0.0, 1.0, 0.0]))
    loss.backward()
    assert loss.item() > 0 and model.instance_head.weight.grad.abs().sum() > 0


def test_masked_softmax_zeroes_padding():
    p = masked_softmax(torch.tensor([[1.0, 2.0, 30.0]]), torch.tensor([[True, True, False]]))
    assert p[0, 2] == 0 and torch.isclose(p.sum(), torch.tensor(1.0))
