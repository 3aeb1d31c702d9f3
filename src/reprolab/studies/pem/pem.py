"""Predictive Entropy Maximization: the objective, its local gradient and the online network.

Network (reconstruction; the abstract names only the ingredients): prediction neurons
ŷ = W x + b, outputs y = Π_P(ŷ) (the domain projection of `domains`), error neurons
e = y − ŷ. The entropy measure is the log-determinant mutual information of CorInfoMax,
H = ½ log det(R_ŷ + εI) − ½ log det(C_e + ε_e I) + ½ n log ε_e, with R_ŷ the covariance of the
predictions and C_e = E[e eᵀ] the second moment of the errors. Replacing the second log-det by
its first-order expansion gives PEM's objective

    J(W, b) = ½ log det(R_ŷ + εI) − (β/2) E‖e‖²,      β = 1/ε_e,

an entropy term (spread the predictions) and a prediction-error term (keep them in the domain).
Its gradient is local: ∂J/∂W = E[M ŷ_c x_cᵀ] + β E[e xᵀ], ∂J/∂b = β E[e], with the lateral
matrix M = (R_ŷ + εI)⁻¹ and centred ŷ_c, x_c (because ½‖Π(u) − u‖² has gradient u − Π(u)).
M is learned by a Hebbian rank update (Woodbury on each minibatch: exactly the inverse of the
exponentially weighted covariance plus εI), and the feedforward rule is error-driven.
`metrics.surrogate_bound` bounds the difference J − H.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from reprolab.studies.pem.domains import Projection, domain_center, projection


def objective(
    W: np.ndarray, b: np.ndarray, X: np.ndarray, proj: Projection, beta: float, eps: float
) -> float:
    """J(W, b) on the samples X (N × m): ½ log det(R_ŷ + εI) − (β/2) mean ‖Π(ŷ) − ŷ‖²."""
    pred = X @ W.T + b
    centred = pred - pred.mean(axis=0)
    cov = centred.T @ centred / len(X)
    _, logdet = np.linalg.slogdet(cov + eps * np.eye(len(b)))
    error = proj(pred) - pred
    return 0.5 * logdet - 0.5 * beta * float(np.mean(np.sum(error**2, axis=1)))


def local_gradient(
    W: np.ndarray,
    b: np.ndarray,
    X: np.ndarray,
    M: np.ndarray,
    x_mean: np.ndarray,
    pred_mean: np.ndarray,
    proj: Projection,
    beta: float,
) -> tuple[np.ndarray, np.ndarray]:
    """(ΔW, Δb) = (mean M ŷ_c x_cᵀ + β e xᵀ, β mean e) over the minibatch X.

    Every term is a product of a pre- and a post-synaptic quantity: the lateral-filtered
    activity M ŷ_c (Hebbian part) and the error e (error-driven part). With M = (R_ŷ + εI)⁻¹
    and the batch means, this is exactly ∂J/∂(W, b) of `objective` on X.
    """
    pred = X @ W.T + b
    error = proj(pred) - pred
    filtered = (pred - pred_mean) @ M  # M is symmetric
    grad_w = (filtered.T @ (X - x_mean) + beta * error.T @ X) / len(X)
    return grad_w, beta * error.mean(axis=0)


def lateral_update(M: np.ndarray, centred: np.ndarray, forget: float, eps: float) -> np.ndarray:
    """Hebbian rank update of M = (R + εI)⁻¹ for R ← forget·R + (1 − forget)·mean ŷ_c ŷ_cᵀ.

    Woodbury identity on the minibatch activity plus a constant leak √((1 − forget) ε) that
    keeps the ε of the objective; with one sample and no leak this is Sherman–Morrison.
    """
    n = M.shape[0]
    weight = (1.0 - forget) / len(centred)
    rows = np.vstack([centred, np.sqrt((1.0 - forget) * eps / weight) * np.eye(n)])
    filtered = rows @ M
    inner = (forget / weight) * np.eye(len(rows)) + filtered @ rows.T
    updated = (M - filtered.T @ np.linalg.solve(inner, filtered)) / forget
    return 0.5 * (updated + updated.T)


@dataclass(frozen=True)
class OnlineConfig:
    """Hyperparameters of online PEM (see params.yaml, `pem.pem`)."""

    beta: float
    eps: float
    lr: float
    lr_decay_epochs: float
    epochs: int
    batch_size: int
    forget: float
    init_scale: float
    clip: float


@dataclass
class Network:
    """A PEM network's state: feedforward W, b, lateral M and the running means it keeps."""

    W: np.ndarray
    b: np.ndarray
    M: np.ndarray
    x_mean: np.ndarray
    pred_mean: np.ndarray
    R: np.ndarray


def init_network(
    X: np.ndarray, n: int, domain: str, init_scale: float, eps: float, rng: np.random.Generator
) -> Network:
    """Small random W (scale init_scale / √(m·var x)), outputs centred in the domain."""
    m = X.shape[1]
    x_mean = X.mean(axis=0)
    W = rng.standard_normal((n, m)) * init_scale / np.sqrt(m * X.var())
    b = domain_center(domain, n) - W @ x_mean
    pred = X @ W.T + b
    R = np.cov(pred.T, bias=True)
    return Network(
        W=W,
        b=b,
        M=np.linalg.inv(R + eps * np.eye(n)),
        x_mean=x_mean,
        pred_mean=pred.mean(axis=0),
        R=R,
    )


def train_online(
    X: np.ndarray,
    n: int,
    domain: str,
    config: OnlineConfig,
    rng: np.random.Generator,
    on_epoch: Callable[[int, Network], None] | None = None,
) -> Network:
    """Online PEM: minibatches in a fresh random order each epoch, local updates only.

    `on_epoch(epoch, network)` (optional) is called after every epoch, for diagnostics.
    The running means of x and ŷ and the lateral M are updated with the same forgetting factor
    per sample (forget**batch per minibatch).
    """
    proj = projection(domain)
    net = init_network(X, n, domain, config.init_scale, config.eps, rng)
    forget = config.forget**config.batch_size
    for epoch in range(config.epochs):
        lr = config.lr / (1.0 + epoch / config.lr_decay_epochs)
        order = rng.permutation(len(X))
        for start in range(0, len(X), config.batch_size):
            batch = X[order[start : start + config.batch_size]]
            pred = batch @ net.W.T + net.b
            net.x_mean = forget * net.x_mean + (1 - forget) * batch.mean(axis=0)
            net.pred_mean = forget * net.pred_mean + (1 - forget) * pred.mean(axis=0)
            net.M = lateral_update(net.M, pred - net.pred_mean, forget, config.eps)
            grad_w, grad_b = local_gradient(
                net.W, net.b, batch, net.M, net.x_mean, net.pred_mean, proj, config.beta
            )
            norm = np.linalg.norm(grad_w)
            scale = min(1.0, config.clip / (lr * norm)) if norm > 0 else 1.0
            net.W = net.W + lr * scale * grad_w
            net.b = net.b + lr * scale * grad_b
        if on_epoch is not None:
            on_epoch(epoch, net)
    return net


def outputs(net: Network, X: np.ndarray, domain: str) -> np.ndarray:
    """The network's outputs Π(W x + b) on X."""
    return projection(domain)(X @ net.W.T + net.b)
