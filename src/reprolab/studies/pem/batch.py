"""Batch solvers of the PEM objective: PEM-batch (fixed β) and the det-max reference (β → ∞).

Both ascend J(W, b) of `pem` on the whole data set with the exact lateral matrix
M = (R_ŷ + εI)⁻¹ and Adam steps (the step sizes of the two terms differ by orders of magnitude,
Adam's per-coordinate scaling absorbs that). The det-max reference solves the constrained
problem max log det(R_ŷ + εI) s.t. ŷ_t ∈ P for all samples (Erdogan's determinant-maximisation
criterion, which LD-InfoMax and CorInfoMax approximate) by penalty continuation: β grows
geometrically over stages, each stage warm-started from the last, and its outputs are the
projection of the final predictions. Batch methods see all samples at once: non-local.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from reprolab.studies.pem.domains import projection
from reprolab.studies.pem.pem import Network, init_network, local_gradient


@dataclass(frozen=True)
class BatchConfig:
    """Stages of full-batch Adam ascent: one β per stage, `iterations` steps each."""

    betas: tuple[float, ...]
    eps: float
    lr: float
    iterations: int
    init_scale: float


def train_batch(
    X: np.ndarray, n: int, domain: str, config: BatchConfig, rng: np.random.Generator
) -> Network:
    """Full-batch ascent of J through the stages of `config`; the final network."""
    proj = projection(domain)
    net = init_network(X, n, domain, config.init_scale, config.eps, rng)
    params = [net.W, net.b]
    first = [np.zeros_like(p) for p in params]
    second = [np.zeros_like(p) for p in params]
    x_mean = X.mean(axis=0)
    step = 0
    for beta in config.betas:
        for _ in range(config.iterations):
            pred = X @ params[0].T + params[1]
            pred_mean = pred.mean(axis=0)
            centred = pred - pred_mean
            M = np.linalg.inv(centred.T @ centred / len(X) + config.eps * np.eye(n))
            grads = local_gradient(params[0], params[1], X, M, x_mean, pred_mean, proj, beta)
            step += 1
            for i, grad in enumerate(grads):
                first[i] = 0.9 * first[i] + 0.1 * grad
                second[i] = 0.999 * second[i] + 0.001 * grad**2
                hat_m = first[i] / (1 - 0.9**step)
                hat_v = second[i] / (1 - 0.999**step)
                params[i] = params[i] + config.lr * hat_m / (np.sqrt(hat_v) + 1e-12)
    net.W, net.b = params
    return net
