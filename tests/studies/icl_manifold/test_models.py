"""The in-context networks: attention = Gaussian kernel, GD layers = least squares, shapes."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from reprolab.studies.icl_manifold.models import (
    LinearTransformer,
    TwoStage,
    gaussian_attention,
    gd_step,
)

INIT = {
    "h1_ratio": 1.5,
    "tau": 0.1,
    "h0": 1.0,
    "rate": 0.5,
    "ridge": 1e-3,
    "step": 0.5,
    "neighbours": 8,
}


def batch(seed=0, b=3, n=40, q=4, d=8):
    g = torch.Generator().manual_seed(seed)
    return (
        torch.randn(b, n, d, generator=g, dtype=torch.float64),
        torch.randn(b, n, generator=g, dtype=torch.float64),
        torch.randn(b, q, d, generator=g, dtype=torch.float64),
    )


def test_gaussian_attention_is_the_normalised_gaussian_kernel():
    xc, _, xq = batch()
    h = torch.tensor(1.3, dtype=torch.float64)
    w = gaussian_attention(xq, xc, h)
    k = torch.exp(-((xq[:, :, None] - xc[:, None]) ** 2).sum(-1) / (2 * h * h))
    assert torch.allclose(w, k / k.sum(-1, keepdim=True), atol=1e-12)


def test_one_attention_layer_is_one_gradient_step():
    """von Oswald: the layer's update equals −η P ∇ of the weighted ridge loss."""
    g = torch.Generator().manual_seed(1)
    psi = torch.randn(2, 3, 20, 5, generator=g, dtype=torch.float64)
    w = torch.rand(2, 3, 20, generator=g, dtype=torch.float64)
    y = torch.randn(2, 3, 20, generator=g, dtype=torch.float64)
    beta = torch.randn(2, 3, 5, generator=g, dtype=torch.float64, requires_grad=True)
    precond = torch.rand(2, 3, 5, generator=g, dtype=torch.float64)
    ridge, step = torch.tensor(0.1, dtype=torch.float64), torch.tensor(0.3, dtype=torch.float64)
    loss = (
        0.5 * (w * (y - (psi * beta[:, :, None]).sum(-1)) ** 2).sum()
        + 0.5 * ridge * (beta**2).sum()
    )
    (grad,) = torch.autograd.grad(loss, beta)
    expected = beta - step * precond * grad
    assert torch.allclose(gd_step(beta, psi, w, y, step, precond, ridge), expected, atol=1e-12)


def test_many_gd_layers_converge_to_the_exact_solve():
    torch.set_default_dtype(torch.float64)
    try:
        xc, yc, xq = batch(2)
        gd = TwoStage(400, exact=False, init={**INIT, "step": 0.3})
        exact = TwoStage(1, exact=True, init=INIT)
        with torch.no_grad():
            assert torch.allclose(gd(xc, yc, xq), exact(xc, yc, xq), atol=1e-4)
    finally:
        torch.set_default_dtype(torch.float32)


def test_exact_two_stage_matches_a_numpy_weighted_fit():
    xc, yc, xq = (t.float() for t in batch(3))
    model = TwoStage(1, exact=True, init=INIT)
    with torch.no_grad():
        psi, w = model.features(xc, xq)
        pred = model(xc, yc, xq).numpy()
    psi, w, y = psi.double().numpy(), w.double().numpy(), yc.double().numpy()
    ridge = np.diag([0.0] + [1e-3] * 5)
    for b in range(3):
        for q in range(4):
            a = psi[b, q].T @ (w[b, q, :, None] * psi[b, q]) + ridge
            beta = np.linalg.solve(a, psi[b, q].T @ (w[b, q] * y[b]))
            assert pred[b, q] == pytest.approx(beta[0], rel=1e-3, abs=1e-4)


def test_linear_transformer_queries_do_not_see_each_other():
    torch.manual_seed(0)
    model = LinearTransformer(8, 16, 2, 4)
    xc, yc, xq = (t.float() for t in batch(4))
    with torch.no_grad():
        full = model(xc, yc, xq)
        alone = model(xc, yc, xq[:, :1])
    assert full.shape == (3, 4)
    assert torch.allclose(full[:, :1], alone, atol=1e-6)
