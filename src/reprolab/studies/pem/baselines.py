"""Baselines: FastICA (non-local), NSM (whitening + nonnegative similarity matching) and
CorInfoMax (online correlative information maximisation with recurrent output dynamics).

* FastICA: scikit-learn's FastICA (unit-variance whitening, `n` components; the contrast
  function and the parallel or deflation algorithm are tuned); it assumes independent sources.
* NSM (Pehlevan, Mohan & Chklovskii 2017): the mixtures are whitened without centring
  (h = Q x with Q Cov(x) Qᵀ = I; here an exact batch whitening, which only helps the
  baseline), then the online NSM network y = argmin_{y ≥ 0} ½ yᵀMy − yᵀWh (projected-
  gradient lateral dynamics, step 1/λ_max(M)) with Hebbian W ← W + η(y hᵀ − W) and anti-Hebbian
  M ← M + η(y yᵀ − M). It assumes uncorrelated, well-grounded nonnegative sources.
* CorInfoMax (Bozkurt, Pehlevan & Erdogan 2023), minibatch form: outputs y ∈ P found by
  projected gradient ascent on γ_y B_y y_c − γ_e B_e e with e = y − W x, for a fixed number of
  inner iterations; then W ← W + μ e xᵀ (least squares) and B_y ≈ (R_y + εI)⁻¹,
  B_e ≈ (R_e + εI)⁻¹ by the same exact Woodbury update as PEM's lateral matrix.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np

from reprolab.studies.pem.domains import domain_center, projection
from reprolab.studies.pem.pem import lateral_update


@dataclass(frozen=True)
class FastICAConfig:
    """FastICA: iteration budget, contrast function (logcosh, exp, cube), algorithm."""

    max_iter: int
    fun: str
    algorithm: str


def fastica(X: np.ndarray, n: int, seed: int, config: FastICAConfig) -> np.ndarray:
    """FastICA's source estimates (N × n)."""
    from sklearn.decomposition import FastICA
    from sklearn.exceptions import ConvergenceWarning

    model = FastICA(
        n_components=n,
        whiten="unit-variance",
        random_state=seed,
        max_iter=config.max_iter,
        fun=config.fun,
        algorithm=config.algorithm,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return model.fit_transform(X)


def whiten_uncentred(X: np.ndarray, n: int) -> np.ndarray:
    """h = Q x with Q the top-n PCA whitening of Cov(x), applied to the uncentred x."""
    values, vectors = np.linalg.eigh(np.cov(X.T, bias=True))
    top = np.argsort(values)[::-1][:n]
    Q = vectors[:, top].T / np.sqrt(values[top])[:, None]
    return X @ Q.T


@dataclass(frozen=True)
class NSMConfig:
    """Online NSM: epochs, minibatch size, Hebbian rate lr/(1 + epoch/decay), inner steps."""

    epochs: int
    batch_size: int
    lr: float
    lr_decay_epochs: float
    inner_iterations: int


def nsm(X: np.ndarray, n: int, config: NSMConfig, rng: np.random.Generator) -> np.ndarray:
    """Whitening + online nonnegative similarity matching; the outputs on X."""
    H = whiten_uncentred(X, n)
    W = np.linalg.qr(rng.standard_normal((n, n)))[0]
    M = np.eye(n)

    def respond(batch: np.ndarray) -> np.ndarray:
        drive = batch @ W.T
        step = 1.0 / np.linalg.eigvalsh(M)[-1]
        y = np.maximum(drive, 0.0)
        for _ in range(config.inner_iterations):
            y = np.maximum(y - step * (y @ M - drive), 0.0)
        return y

    for epoch in range(config.epochs):
        lr = config.lr / (1.0 + epoch / config.lr_decay_epochs)
        order = rng.permutation(len(H))
        for start in range(0, len(H), config.batch_size):
            batch = H[order[start : start + config.batch_size]]
            y = respond(batch)
            W = W + lr * (y.T @ batch / len(batch) - W)
            M = M + lr * (y.T @ y / len(batch) - M)
    return respond(H)


@dataclass(frozen=True)
class CorInfoMaxConfig:
    """Minibatch CorInfoMax hyperparameters (see params.yaml, `pem.corinfomax`)."""

    epochs: int
    batch_size: int
    lr: float
    lr_decay_epochs: float
    forget: float
    eps: float
    gamma_e: float
    init_by: float
    init_be: float
    inner_iterations: int
    inner_lr: float


def corinfomax(
    X: np.ndarray, n: int, domain: str, config: CorInfoMaxConfig, rng: np.random.Generator
) -> np.ndarray:
    """Online CorInfoMax on minibatches; the outputs on X after training."""
    proj = projection(domain)
    m = X.shape[1]
    W = rng.standard_normal((n, m)) * 0.3 / np.sqrt(m * X.var())
    center = domain_center(domain, n)
    x_mean = X.mean(axis=0)
    B_y = config.init_by * np.eye(n)
    B_e = config.init_be * np.eye(n)
    y_mean = center.copy()
    forget = config.forget**config.batch_size

    def respond(batch: np.ndarray) -> np.ndarray:
        pred = (batch - x_mean) @ W.T + center
        y = proj(pred)
        scale = config.inner_lr / np.linalg.eigvalsh(config.gamma_e * B_e)[-1]
        for _ in range(config.inner_iterations):
            grad = (y - y_mean) @ B_y - config.gamma_e * (y - pred) @ B_e
            y = proj(y + scale * grad)
        return y

    for epoch in range(config.epochs):
        lr = config.lr / (1.0 + epoch / config.lr_decay_epochs)
        order = rng.permutation(len(X))
        for start in range(0, len(X), config.batch_size):
            batch = X[order[start : start + config.batch_size]]
            y = respond(batch)
            error = y - ((batch - x_mean) @ W.T + center)
            W = W + lr * error.T @ (batch - x_mean) / len(batch)
            y_mean = forget * y_mean + (1 - forget) * y.mean(axis=0)
            B_y = lateral_update(B_y, y - y_mean, forget, config.eps)
            B_e = lateral_update(B_e, error, forget, config.eps)
    return respond(X)
