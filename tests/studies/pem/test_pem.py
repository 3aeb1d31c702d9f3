"""PEM: the local update is the gradient of the objective; the lateral M is the inverse EMA
covariance; online PEM separates an easy mixture."""

import numpy as np
import pytest
import torch

from reprolab.studies.pem.domains import projection
from reprolab.studies.pem.metrics import sinr_db
from reprolab.studies.pem.pem import (
    OnlineConfig,
    lateral_update,
    local_gradient,
    objective,
    outputs,
    train_online,
)
from reprolab.studies.pem.sources import correlated_uniform


def _batch(seed=0, n=3, m=5, size=64):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((size, m))
    W = 0.5 * rng.standard_normal((n, m))
    b = 0.3 * rng.standard_normal(n)
    return X, W, b


def _exact_lateral(X, W, b, eps):
    pred = X @ W.T + b
    centred = pred - pred.mean(axis=0)
    M = np.linalg.inv(centred.T @ centred / len(X) + eps * np.eye(len(b)))
    return M, X.mean(axis=0), pred.mean(axis=0)


def test_local_update_equals_the_autograd_gradient_of_the_objective_on_the_box():
    X, W, b = _batch()
    beta, eps = 7.0, 1e-2
    M, x_mean, pred_mean = _exact_lateral(X, W, b, eps)
    grad_w, grad_b = local_gradient(W, b, X, M, x_mean, pred_mean, projection("box"), beta)
    Wt = torch.tensor(W, requires_grad=True)
    bt = torch.tensor(b, requires_grad=True)
    pred = torch.tensor(X) @ Wt.T + bt
    centred = pred - pred.mean(dim=0)
    cov = centred.T @ centred / len(X)
    error = pred.clamp(0.0, 1.0) - pred
    J = 0.5 * torch.logdet(cov + eps * torch.eye(3, dtype=torch.float64))
    J = J - 0.5 * beta * (error**2).sum(dim=1).mean()
    J.backward()
    np.testing.assert_allclose(grad_w, Wt.grad.numpy(), rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(grad_b, bt.grad.numpy(), rtol=1e-9, atol=1e-12)
    assert np.isclose(J.item(), objective(W, b, X, projection("box"), beta, eps))


def test_local_update_equals_the_numerical_gradient_on_the_simplex():
    X, W, b = _batch(seed=1)
    beta, eps, proj = 3.0, 1e-2, projection("simplex")
    M, x_mean, pred_mean = _exact_lateral(X, W, b, eps)
    grad_w, grad_b = local_gradient(W, b, X, M, x_mean, pred_mean, proj, beta)
    h = 1e-6
    numeric = np.zeros_like(W)
    for idx in np.ndindex(W.shape):
        step = np.zeros_like(W)
        step[idx] = h
        up, down = (
            objective(W + step, b, X, proj, beta, eps),
            objective(W - step, b, X, proj, beta, eps),
        )
        numeric[idx] = (up - down) / (2 * h)
    np.testing.assert_allclose(grad_w, numeric, rtol=1e-6, atol=1e-7)
    numeric_b = [
        (objective(W, b + h * e, X, proj, beta, eps) - objective(W, b - h * e, X, proj, beta, eps))
        / (2 * h)
        for e in np.eye(len(b))
    ]
    np.testing.assert_allclose(grad_b, numeric_b, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("eps", [0.0, 1e-2])
def test_lateral_update_tracks_the_inverse_of_the_weighted_covariance(eps):
    rng = np.random.default_rng(2)
    n, forget = 3, 0.9
    R = np.diag([1.0, 2.0, 0.5])
    M = np.linalg.inv(R + eps * np.eye(n))
    for _ in range(6):
        batch = rng.standard_normal((4, n))
        M = lateral_update(M, batch, forget, eps)
        R = forget * R + (1 - forget) * batch.T @ batch / len(batch)
        np.testing.assert_allclose(M, np.linalg.inv(R + eps * np.eye(n)), rtol=1e-9)


def test_one_sample_without_leak_is_sherman_morrison():
    rng = np.random.default_rng(3)
    A = rng.standard_normal((3, 3))
    M = np.linalg.inv(A @ A.T + np.eye(3))
    y, forget = rng.standard_normal(3), 0.95
    gamma = (1 - forget) / forget
    My = M @ y
    expected = (M - gamma * np.outer(My, My) / (1 + gamma * y @ My)) / forget
    np.testing.assert_allclose(lateral_update(M, y[None, :], forget, 0.0), expected, rtol=1e-10)


def test_online_pem_separates_unmixed_independent_uniform_sources():
    # A = I, 5 independent uniform sources, 40 dB: the regression case of the design card
    rng = np.random.default_rng(4)
    sources = correlated_uniform(2000, 5, 0.0, rng)
    X = sources + 0.01 * rng.standard_normal(sources.shape)
    config = OnlineConfig(
        beta=200.0,
        eps=1e-3,
        lr=0.002,
        lr_decay_epochs=5.0,
        epochs=40,
        batch_size=10,
        forget=0.999,
        init_scale=0.3,
        clip=1.0,
    )
    curve = []
    net = train_online(
        X, 5, "box", config, np.random.default_rng(5), on_epoch=lambda e, n: curve.append(n.W)
    )
    assert len(curve) == 40
    assert sinr_db(sources, outputs(net, X, "box")) > 20.0
